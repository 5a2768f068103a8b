// Package text holds the string helpers every package shares: Truncate,
// which bounds a string in bytes; Redact with its marker Redacted; and
// Origin, which decides what of a URL may be shown, with OriginsOnly for
// free text. It
// imports nothing from this module, so any package may use it.
package text

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redacted is what stands in place of a secret in any text we show or log.
const Redacted = "[redacted]"

// ellipsis marks the place where Truncate cut.
const ellipsis = "…"

// Truncate returns s when it is at most n bytes long. Otherwise it cuts s
// at a rune boundary and appends "…", so the result is at most n bytes,
// the marker included; when n is shorter than the marker, the cut has no
// marker. A negative n counts as 0. Valid UTF-8 in gives valid UTF-8 out.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	mark := ellipsis
	if n < len(mark) {
		mark = ""
	}
	cut := n - len(mark)
	// A rune is at most utf8.UTFMax bytes: look no further back, so that
	// invalid input is cut near n too.
	for back := 0; cut > 0 && back < utf8.UTFMax-1 && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	return s[:cut] + mark
}

// Redact returns s with every occurrence of each non-empty secret replaced
// by Redacted. Occurrences that overlap, such as a secret inside a longer
// one, become one Redacted, so no part of any occurrence survives.
func Redact(s string, secrets ...string) string {
	// covered[i] is the end of the occurrences that start at i, 0 if none.
	var covered []int
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		for from := 0; ; {
			i := strings.Index(s[from:], secret)
			if i < 0 {
				break
			}
			if covered == nil {
				covered = make([]int, len(s))
			}
			start := from + i
			covered[start] = max(covered[start], start+len(secret))
			from = start + 1
		}
	}
	if covered == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	kept := 0 // s[kept:i] is not yet written
	for i := 0; i < len(s); i++ {
		end := covered[i]
		if end == 0 {
			continue
		}
		// Extend over every occurrence that starts before the run ends.
		for j := i + 1; j < end; j++ {
			end = max(end, covered[j])
		}
		b.WriteString(s[kept:i])
		b.WriteString(Redacted)
		kept, i = end, end-1
	}
	b.WriteString(s[kept:])
	return b.String()
}

// Origin is what a message, a log line or a hint may say of a hostile
// URL: raw's scheme://host[:port], lower-cased, without user info, path,
// query or fragment. It is "" when raw does not parse or has no scheme or
// no host (https:///key/mcp, an opaque mailto:x), so nothing else of raw
// can leave. See [OriginOf].
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return OriginOf(u)
}

// maxOrigin bounds what OriginOf returns, in bytes.
const maxOrigin = 300

// OriginOf is [Origin] of a parsed URL; "" for nil. A rune of the host
// that is not printable (a control or format character such as U+202E)
// is written as a \u escape, and the result is at most 300 bytes.
func OriginOf(u *url.URL) string {
	if u == nil || u.Scheme == "" || u.Opaque != "" || u.Hostname() == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(strings.ToLower(u.Scheme))
	b.WriteString("://")
	for _, r := range strings.ToLower(u.Host) {
		if unicode.IsPrint(r) && r != ' ' {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r) // 'x' with x an escape
		b.WriteString(q[1 : len(q)-1])
	}
	return Truncate(b.String(), maxOrigin)
}

// urlInText matches what looks like an absolute URL in free text: a
// scheme, "://", and what follows up to white space, a quote or an angle
// bracket.
var urlInText = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'`<>]*")

// OriginsOnly returns s with every absolute URL in it replaced by its
// [Origin], or by [Redacted] when it has none (https:///key/mcp): for text
// a library wrote about URLs a hostile document supplied. Punctuation that
// ends a URL, as in "(see https://a.example/x).", stays after its origin.
func OriginsOnly(s string) string {
	return urlInText.ReplaceAllStringFunc(s, func(m string) string {
		raw := strings.TrimRight(m, ".,;:!?)]}")
		tail := m[len(raw):]
		if o := Origin(raw); o != "" {
			return o + tail
		}
		return Redacted + tail
	})
}

// ParseError is what a message may say of url.Parse's error: its words
// only. The parser quotes what it refused ("invalid port \":s3cret\" after
// host" for https://user:s3cret/mcp), and the quoted part may be a secret.
func ParseError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg, _, _ := strings.Cut(err.Error(), `"`)
	return strings.TrimSpace(msg)
}
