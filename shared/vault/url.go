package vault

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/text"
)

// ErrBadURL is wrapped by every NormalizeURL error. Its messages never quote
// the URL, which may carry user info or a secret in its query.
var ErrBadURL = errors.New("vault: unusable server URL")

// NormalizeURL returns the form of an absolute http(s) URL that credential
// matching compares: scheme and host lower-cased, a default port (80, 443)
// dropped and any other port in decimal, the path exactly as written (an
// empty path is "/"), the query exactly as written, the fragment dropped.
// A URL guard.CheckURL refuses (user info, no host, another scheme, a port
// outside 1-65535) or with an empty port is an error wrapping ErrBadURL and
// guard.ErrBadURL.
func NormalizeURL(raw string) (string, error) {
	u, err := guard.CheckURL(raw, true)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	if u.Port() == "" && strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("%w: empty port", ErrBadURL)
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p) // 1-65535: guard.CheckURL checked it
		if p = strconv.Itoa(n); p != defaultPorts[u.Scheme] {
			host += ":" + p
		}
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	out := u.Scheme + "://" + host + path
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, nil
}

var defaultPorts = map[string]string{"https": "443", "http": "80"}

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
