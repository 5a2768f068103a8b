package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// invocation is one event file, ready to send to one function.
type invocation struct {
	path     string
	function string // "discover" or "call"
	payload  []byte
}

// readEvent reads an event file and decides which function it is for: a
// request (or, in an SQS batch, a record body) naming tool_name is a call;
// one naming catalog_id without tool_name is a discovery; anything else
// (a malformed event) goes by the file name, call when it contains "call".
func readEvent(path string) (invocation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return invocation{}, fmt.Errorf("read event: %w", err)
	}
	inv := invocation{path: path, payload: b, function: "discover"}
	if strings.Contains(filepath.Base(path), "call") {
		inv.function = "call"
	}
	for _, req := range requests(b) {
		if _, ok := req["tool_name"]; ok {
			inv.function = "call"
			break
		}
		if _, ok := req["catalog_id"]; ok {
			if _, ok := req["server_url"]; ok {
				inv.function = "discover"
			}
		}
	}
	return inv, nil
}

// requests returns the request objects an event carries: the event itself
// for a direct invocation, each record's decoded body for an SQS batch.
// Parts that are not JSON objects are skipped.
func requests(payload []byte) []map[string]any {
	top, ok := decodeObject(payload)
	if !ok {
		return nil
	}
	records, isBatch := top["Records"].([]any)
	if !isBatch {
		return []map[string]any{top}
	}
	var out []map[string]any
	for _, r := range records {
		rec, _ := r.(map[string]any)
		body, _ := rec["body"].(string)
		if req, ok := decodeObject([]byte(body)); ok {
			out = append(out, req)
		}
	}
	return out
}

func decodeObject(b []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// isSweep reports whether the event is the sweep, {"sweep": {...}}.
func (inv invocation) isSweep() bool {
	top, ok := decodeObject(inv.payload)
	_, sweep := top["sweep"]
	return ok && sweep
}

// catalogIDs returns the catalog ids the event's requests name, in order.
func (inv invocation) catalogIDs() []string {
	var ids []string
	for _, req := range requests(inv.payload) {
		if id, ok := req["catalog_id"].(string); ok && id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// oauthVault is the vault the OAuth samples name (events/*-oauth.json):
// their placeholder server is the OAuth example server, and localrun keeps
// the vault's mcp_oauth credential for it.
const oauthVault = "example-oauth"

// namesVault reports whether a request of the event names vault id.
func (inv invocation) namesVault(id string) bool {
	return slices.ContainsFunc(requests(inv.payload), func(req map[string]any) bool { return namesVault(req, id) })
}

func namesVault(req map[string]any, id string) bool {
	ids, _ := req["vault_ids"].([]any)
	return slices.Contains(ids, any(id))
}

// withServer returns inv with every placeholder server_url (a host under a
// reserved example domain) replaced, in the event and in every SQS record
// body: by oauthURL in a request naming oauthVault (when oauthURL is not
// ""), else by serverURL. Other URLs, such as ones that show an egress
// refusal, are kept. A payload that is not a JSON object is returned
// unchanged.
func (inv invocation) withServer(serverURL, oauthURL string) invocation {
	top, ok := decodeObject(inv.payload)
	if !ok {
		return inv
	}
	replaceServer := func(req map[string]any, serverURL string) bool {
		if oauthURL != "" && namesVault(req, oauthVault) {
			serverURL = oauthURL
		}
		return replaceServer(req, serverURL)
	}
	changed := replaceServer(top, serverURL)
	if records, isBatch := top["Records"].([]any); isBatch {
		for _, r := range records {
			rec, _ := r.(map[string]any)
			body, _ := rec["body"].(string)
			req, ok := decodeObject([]byte(body))
			if !ok || !replaceServer(req, serverURL) {
				continue
			}
			nb, err := json.Marshal(req)
			if err != nil {
				continue
			}
			rec["body"] = string(nb)
			changed = true
		}
	}
	if !changed {
		return inv
	}
	b, err := json.Marshal(top)
	if err != nil {
		return inv
	}
	inv.payload = b
	return inv
}

func replaceServer(req map[string]any, serverURL string) bool {
	raw, ok := req["server_url"].(string)
	if !ok || !isPlaceholder(raw) {
		return false
	}
	req["server_url"] = serverURL
	return true
}

// isPlaceholder reports whether raw names a host under the domains reserved
// for examples (RFC 2606, RFC 6761).
func isPlaceholder(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range []string{"example.com", "example.net", "example.org", "example"} {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// discoverRequest is a direct discover invocation for catalog id of
// server, with the credential of vaults (none: anonymous).
func discoverRequest(id, server string, vaults ...string) invocation {
	b, _ := json.Marshal(struct {
		CatalogID string   `json:"catalog_id"`
		ServerURL string   `json:"server_url"`
		VaultIDs  []string `json:"vault_ids,omitempty"`
	}{id, server, vaults})
	return invocation{path: "(discover the example server into catalog " + id + ")", function: "discover", payload: b}
}
