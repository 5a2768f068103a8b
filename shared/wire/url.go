package wire

import (
	"errors"
	"net/url"

	"github.com/mcpfn/mcpfn/shared/guard"
)

// CheckServerURL parses an MCP server URL from a request. A URL that is not
// a usable http(s) URL (userinfo, no host, bad port) is InvalidRequest; a
// well-formed URL the egress policy p refuses — a denied literal address,
// or plain http without an allow entry — is EgressDenied. A nil p means
// guard.Default(). Host names are judged again at dial time.
func CheckServerURL(raw string, p *guard.Policy) (*url.URL, error) {
	if _, err := guard.CheckURL(raw, true); err != nil {
		return nil, Errorf(InvalidRequest, err, "server_url")
	}
	if p == nil {
		p = guard.Default()
	}
	u, err := p.CheckURL(raw)
	if err != nil {
		if errors.Is(err, guard.ErrDenied) || errors.Is(err, guard.ErrBadURL) {
			return nil, Errorf(EgressDenied, err, "server_url refused by the egress policy")
		}
		return nil, Errorf(Internal, err, "server_url check failed")
	}
	return u, nil
}
