package text_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/shared/text"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 10, "abc"},
		{"n = len(s)", "abcdef", 6, "abcdef"},
		{"one over", "abcdefg", 6, "abc…"}, // the marker is 3 bytes
		{"empty", "", 0, ""},
		{"n = marker", "abcdef", 3, "…"},
		{"n < marker", "abcdef", 2, "ab"},
		{"n = 0", "abcdef", 0, ""},
		{"n < 0", "abcdef", -5, ""},
		{"two-byte runes", "ééééé", 8, "éé…"},                             // 10 bytes; cut at 5 backs off to 4
		{"three-byte runes", "€€€€", 10, "€€…"},                           // 12 bytes; cut at 7 backs off to 6
		{"four-byte runes", "😀😀😀", 9, "😀…"},                               // 12 bytes; cut at 6 backs off to 4
		{"n < marker, mid-rune", "€uro", 2, ""},                           // no whole rune fits
		{"n < marker, rune fits", "é€", 2, "é"},                           // 5 bytes
		{"marker in s", "a…b…c…d", 8, "a…b…"},                             // cut at 5, where the second … starts
		{"invalid UTF-8", strings.Repeat("\x80", 10), 9, "\x80\x80\x80…"}, // cut at 6 backs off at most 3 bytes
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := text.Truncate(tc.s, tc.n)
			if got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
			if len(got) > max(tc.n, 0) && got != tc.s {
				t.Errorf("Truncate(%q, %d) is %d bytes, over the limit", tc.s, tc.n, len(got))
			}
		})
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       string
		secrets []string
		want    string
	}{
		{"none", "Bearer tok-1", nil, "Bearer tok-1"},
		{"empty secret", "Bearer tok-1", []string{""}, "Bearer tok-1"},
		{"empty among others", "Bearer tok-1", []string{"", "tok-1", ""}, "Bearer [redacted]"},
		{"every occurrence", "tok tok, tok", []string{"tok"}, "[redacted] [redacted], [redacted]"},
		{"absent", "nothing here", []string{"tok-1"}, "nothing here"},
		{"whole s", "tok-1", []string{"tok-1"}, "[redacted]"},
		{"inside a longer one", "key=abc123", []string{"abc", "abc123"}, "key=[redacted]"},
		{"longer one given last", "key=abc123 and abc", []string{"abc123", "abc"}, "key=[redacted] and [redacted]"},
		{"overlapping", "xabcdefx", []string{"abcd", "cdef"}, "x[redacted]x"},
		{"overlapping itself", "aaaaa", []string{"aaa"}, "[redacted]"},
		{"adjacent", "tok1tok2", []string{"tok1", "tok2"}, "[redacted][redacted]"},
		{"repeated secret", "a tok b", []string{"tok", "tok"}, "a [redacted] b"},
		{"multi-byte", "clé: sécret!", []string{"sécret"}, "clé: [redacted]!"},
		{"the marker itself", "[redacted]", []string{"redacted"}, "[[redacted]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := text.Redact(tc.s, tc.secrets...); got != tc.want {
				t.Errorf("Redact(%q, %q) = %q, want %q", tc.s, tc.secrets, got, tc.want)
			}
		})
	}
}

// FuzzTruncate: the result is never longer than n (or than s), is a prefix
// of s followed by at most the marker, and is valid UTF-8 when s is.
func FuzzTruncate(f *testing.F) {
	for _, s := range []string{"", "abc", "ééééé", "€€€€", "😀😀😀", "a…b", "\x80\xff"} {
		for _, n := range []int{-1, 0, 1, 2, 3, 4, 5, 8} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := text.Truncate(s, n)
		if len(s) <= n {
			if got != s {
				t.Fatalf("Truncate(%q, %d) = %q, want s unchanged", s, n, got)
			}
			return
		}
		if len(got) > max(n, 0) {
			t.Fatalf("Truncate(%q, %d) = %q, %d bytes", s, n, got, len(got))
		}
		if !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
			t.Fatalf("Truncate(%q, %d) = %q, not a prefix of s", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q, invalid UTF-8", s, n, got)
		}
	})
}

// FuzzRedact: no secret of at least two bytes survives in the result
// unless the marker itself contains it, and a result without secrets is s.
func FuzzRedact(f *testing.F) {
	f.Add("Bearer tok-123 at tok", "tok-123", "tok")
	f.Add("xabcdefx", "abcd", "cdef")
	f.Add("aaaaa", "aaa", "")
	f.Fuzz(func(t *testing.T, s, a, b string) {
		got := text.Redact(s, a, b)
		for _, secret := range []string{a, b} {
			if secret == "" || strings.Contains(secret, "\x00") {
				continue
			}
			if strings.Contains(strings.ReplaceAll(got, text.Redacted, "\x00"), secret) {
				t.Fatalf("Redact(%q, %q, %q) = %q still holds %q", s, a, b, got, secret)
			}
		}
		if !strings.Contains(s, a) && !strings.Contains(s, b) && got != s {
			t.Fatalf("Redact(%q, %q, %q) = %q, want s unchanged", s, a, b, got)
		}
	})
}

func TestOrigin(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"full", "https://User:pw@MCP.Example.com:8443/p/a?q=s#f", "https://mcp.example.com:8443"},
		{"loopback with port", "http://127.0.0.1:9/mcp", "http://127.0.0.1:9"},
		{"no host, key in path", "https:///sk-CANARY/mcp", ""},
		{"port but no host", "https://:443/sk-CANARY", ""},
		{"userinfo only", "https://sk-CANARY@/mcp", ""},
		{"userinfo kept out", "https://sk-CANARY:x@mcp.example.com/", "https://mcp.example.com"},
		{"query kept out", "https://mcp.example.com?key=sk-CANARY", "https://mcp.example.com"},
		{"fragment kept out", "https://mcp.example.com/#sk-CANARY", "https://mcp.example.com"},
		{"IPv6 with port", "https://[2001:DB8::1]:8443/sk-CANARY", "https://[2001:db8::1]:8443"},
		{"IPv6 with zone", "https://[fe80::1%25eth0]/sk-CANARY", "https://[fe80::1%eth0]"},
		{"opaque", "https:sk-CANARY/mcp", ""},
		{"opaque mailto", "mailto:sk-CANARY@example.com", ""},
		{"no scheme", "mcp.example.com/sk-CANARY", ""},
		{"scheme-relative", "//mcp.example.com/sk-CANARY", ""},
		{"relative", "/sk-CANARY", ""},
		{"bad escape", "https://mcp.example.com/%zz/sk-CANARY", ""},
		{"control character in path", "https://mcp.example.com/sk-CANARY\x7f", ""},
		{"control character in host", "https://mcp\x00.example.com/sk-CANARY", ""},
		{"format character in host", "https://mcp.example.com\u202e/sk-CANARY", `https://mcp.example.com\u202e`},
		{"IDN host", "https://Bücher.example/sk-CANARY", "https://bücher.example"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := text.Origin(tc.raw)
			if got != tc.want {
				t.Errorf("Origin(%q) = %q, want %q", tc.raw, got, tc.want)
			}
			if strings.Contains(got, "CANARY") {
				t.Errorf("Origin(%q) = %q shows more than the origin", tc.raw, got)
			}
		})
	}
}

func TestOriginOfLongHost(t *testing.T) {
	u := &url.URL{Scheme: "https", Host: strings.Repeat("a", 1000) + ".example"}
	if got := text.OriginOf(u); len(got) > 300 || !strings.HasPrefix(got, "https://aaa") {
		t.Errorf("OriginOf(long host) = %d bytes %.20q…, want at most 300", len(got), got)
	}
	if got := text.OriginOf(nil); got != "" {
		t.Errorf("OriginOf(nil) = %q", got)
	}
}

func TestOriginsOnly(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"quoted", `got metadata resource "https://evil.example/sk-CANARY", want "https://mcp.example.com/mcp?key=sk-CANARY"`,
			`got metadata resource "https://evil.example", want "https://mcp.example.com"`},
		{"no host", `Get "https:///sk-CANARY/.well-known/x": http: no Host in request URL`, `Get "[redacted]": http: no Host in request URL`},
		{"bare, then words", "authorization server at https://as.example/sk-CANARY does not implement PKCE",
			"authorization server at https://as.example does not implement PKCE"},
		{"userinfo", "see http://u:sk-CANARY@as.example:8443/p.", "see http://as.example:8443."},
		{"in parentheses", "(at https://as.example) and (at https://as.example/sk-CANARY).", "(at https://as.example) and (at https://as.example)."},
		{"host-less in parentheses", "(https:///sk-CANARY)", "([redacted])"},
		{"IPv6", "dial https://[::1]:9/sk-CANARY", "dial https://[::1]:9"},
		{"two", "a https://a.example/sk-CANARY b https://b.example/?sk-CANARY", "a https://a.example b https://b.example"},
		{"no URL", "nothing here: sk-CANARY", "nothing here: sk-CANARY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := text.OriginsOnly(tc.in); got != tc.want {
				t.Errorf("OriginsOnly(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzOrigin: whatever raw is, Origin is "" or scheme://host[:port] in
// printable text, with nothing of a path, query, fragment or user info.
func FuzzOrigin(f *testing.F) {
	for _, seed := range []string{"https://u:p@a.example:8/p?q#f", "https:///k/mcp", "https:k", "//a/b", "https://[::1%25x]/p", "https://a\u202e/p", "x://y@"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := text.Origin(raw)
		if got == "" {
			return
		}
		scheme, rest, ok := strings.Cut(got, "://")
		if !ok || scheme == "" || rest == "" || strings.ContainsAny(rest, "/?#@") {
			t.Fatalf("Origin(%q) = %q, not scheme://host[:port]", raw, got)
		}
		if i := strings.IndexFunc(got, func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' }); i >= 0 {
			t.Fatalf("Origin(%q) = %q has an unprintable rune", raw, got)
		}
	})
}

func TestParseErrorKeepsWordsOnly(t *testing.T) {
	for _, raw := range []string{
		"https://user:s3cret/mcp", // invalid port ":s3cret" after host
		"https://h/%zs3cret",      // invalid URL escape "%zs"
		"https://[s3cret/mcp",     // missing ']' in host
	} {
		_, err := url.Parse(raw)
		if err == nil {
			t.Fatalf("url.Parse(%q) succeeded", raw)
		}
		got := text.ParseError(err)
		if got == "" || strings.Contains(got, "s3cret") || strings.Contains(got, "%zs") {
			t.Errorf("ParseError(%q) = %q; want the parser's words only", raw, got)
		}
	}
}
