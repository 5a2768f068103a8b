package guard

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/mcpfn/mcpfn/shared/text"
)

// CheckURL parses raw as an MCP server URL and refuses, with an error
// wrapping [ErrBadURL], any scheme but https (and http when allowHTTP),
// userinfo, a missing host, or a port outside 1-65535. An error names at
// most raw's origin ([text.Origin]): never its userinfo, path, query or
// fragment, also when raw has no host.
func CheckURL(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadURL, text.ParseError(err))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return nil, fmt.Errorf("%w: %splain http needs an egress allow entry; use https", ErrBadURL, shown(u))
		}
	case "":
		return nil, fmt.Errorf("%w: missing scheme, want https://", ErrBadURL)
	default:
		return nil, fmt.Errorf("%w: scheme %q not allowed, want https", ErrBadURL, u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: %suserinfo not allowed; put credentials in the vault", ErrBadURL, shown(u))
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: missing host, want https://host/…", ErrBadURL)
	}
	if ps := u.Port(); ps != "" {
		if n, err := strconv.ParseUint(ps, 10, 16); err != nil || n == 0 {
			return nil, fmt.Errorf("%w: %sport %q is not in 1-65535", ErrBadURL, shown(u), ps)
		}
	}
	return u, nil
}

// CheckURL is [CheckURL] with plain http allowed only when p has allow
// entries. A literal IP host is also judged by [Policy.Check], returning a
// *[DeniedError].
func (p *Policy) CheckURL(raw string) (*url.URL, error) {
	u, err := CheckURL(raw, p.HasAllow())
	if err != nil {
		return nil, err
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return u, nil // a name: judged on each resolved address at dial time
	}
	port := uint16(443)
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		n, _ := strconv.ParseUint(ps, 10, 16)
		port = uint16(n)
	}
	network := "tcp6"
	if a.Unmap().Is4() {
		network = "tcp4"
	}
	if err := p.Check(network, netip.AddrPortFrom(a, port)); err != nil {
		return nil, err
	}
	return u, nil
}

// shown is what a refusal says of u: its origin and ": ", or "" when u
// has none.
func shown(u *url.URL) string {
	if o := text.OriginOf(u); o != "" {
		return o + ": "
	}
	return ""
}

// redact renders u as scheme://host/path, without userinfo, query or
// fragment, for a redirect's message.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}
