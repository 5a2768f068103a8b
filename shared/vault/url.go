package vault

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpfn/mcpfn/shared/text"
)

// ErrBadURL is wrapped by every NormalizeURL error. Its messages never quote
// the URL, which may carry user info or a secret in its query.
var ErrBadURL = errors.New("vault: unusable server URL")

// NormalizeURL returns the form of an absolute http(s) URL that credential
// matching compares: scheme and host lower-cased, a default port (80, 443)
// dropped and any other port in decimal, the path exactly as written (an
// empty path is "/"), the query exactly as written, the fragment dropped.
// User info, a missing host and other schemes are errors wrapping ErrBadURL.
func NormalizeURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrBadURL, text.ParseError(err))
	}
	scheme := strings.ToLower(u.Scheme)
	var defaultPort string
	switch scheme {
	case "https":
		defaultPort = "443"
	case "http":
		defaultPort = "80"
	default:
		return "", fmt.Errorf("%w: scheme must be http or https", ErrBadURL)
	}
	if u.Opaque != "" {
		return "", fmt.Errorf("%w: not a hierarchical URL", ErrBadURL)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: user info is not allowed", ErrBadURL)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%w: no host", ErrBadURL)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%w: port out of range", ErrBadURL)
		}
		if p = strconv.Itoa(n); p != defaultPort {
			host += ":" + p
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("%w: empty port", ErrBadURL)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	out := scheme + "://" + host + path
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, nil
}

// parts splits a normalised URL into origin, path and query.
func parts(norm string) (origin, path, query string) {
	scheme, rest, _ := strings.Cut(norm, "://")
	rest, query, _ = strings.Cut(rest, "?")
	host, p, _ := strings.Cut(rest, "/")
	return scheme + "://" + host, "/" + p, query
}

// redactURL shows a normalised URL without its query, which may carry a
// secret.
func redactURL(norm string) string {
	if i := strings.IndexByte(norm, '?'); i >= 0 {
		return norm[:i] + "?" + text.Redacted
	}
	return norm
}
