package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	methodDiscover = "server/discover"
	// statelessEra is the first protocol version without a handshake.
	statelessEra = "2026-07-28"
)

// primer returns the version and result a Config.Discovery primes a
// connection with, or ok false when it cannot: too large, not an object,
// or naming no supported version of statelessEra or later.
func primer(raw string) (version string, result []byte, ok bool) {
	if len(raw) == 0 || len(raw) > MaxDiscoveryBytes {
		return "", nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &top) != nil {
		return "", nil, false
	}
	var offered []string
	if json.Unmarshal(top["supportedVersions"], &offered) != nil {
		return "", nil, false
	}
	for _, v := range sdk.SupportedProtocolVersions() { // newest first
		if v >= statelessEra && slices.Contains(offered, v) {
			return v, []byte(raw), true
		}
	}
	return "", nil, false
}

// discoveryOf is the Stats.Discovery of a connection that negotiated res:
// a server/discover result naming its version, capabilities and server
// info, or "" before statelessEra or past MaxDiscoveryBytes.
func discoveryOf(res *sdk.InitializeResult, name, version string) string {
	if res.ProtocolVersion < statelessEra {
		return ""
	}
	d := &sdk.DiscoverResult{SupportedVersions: []string{res.ProtocolVersion}, Capabilities: res.Capabilities}
	if res.ServerInfo != nil {
		d.Meta = sdk.Meta{sdk.MetaKeyServerInfo: &sdk.Implementation{Name: name, Version: version}}
	}
	b, err := json.Marshal(d)
	if err != nil || len(b) > MaxDiscoveryBytes {
		return ""
	}
	return string(b)
}

// primedAnswer is the local answer to the SDK's server/discover request
// req (JSON-RPC id id): result, as the server gave it to an earlier
// connection.
func primedAnswer(req *http.Request, id, result []byte) *http.Response {
	body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+len(result))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"result":`...)
	body = append(body, result...)
	body = append(body, '}')
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// refusal is a non-2xx answer's status and JSON-RPC error.
type refusal struct {
	status  int
	code    int64
	message string
}

// refusalOf reads the code and message of the JSON-RPC error object raw.
// The SDK cannot always surface them: a TypeScript SDK refusal has a null
// id, which it does not decode.
func refusalOf(status int, raw []byte) refusal {
	r := refusal{status: status}
	var e map[string]json.RawMessage
	if json.Unmarshal(raw, &e) == nil {
		_ = json.Unmarshal(e["code"], &r.code)
		_ = json.Unmarshal(e["message"], &r.message)
	}
	return r
}

// legacy reports whether r, the answer to a primed request, says the
// server does not speak the primed version: an HTTP 400 carrying an
// unsupported-version error, or a legacy server's refusal of a request
// that has no session or initialize before it. The server refused before
// running anything, so connecting again is safe.
func (r refusal) legacy() bool {
	if r.status != http.StatusBadRequest {
		return false
	}
	if r.code == sdk.CodeUnsupportedProtocolVersion {
		return true
	}
	m := strings.ToLower(r.message)
	return strings.Contains(m, "protocol version") || strings.Contains(m, "not initialized") || strings.Contains(m, "session")
}
