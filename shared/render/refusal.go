package render

import (
	"errors"
	"regexp"
	"strings"
	"unicode"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/text"
)

// maxRefusalMessage bounds the server's own words quoted in a refusal.
const maxRefusalMessage = 300

// Refusal is the tool_result for a call the server answered by refusing it
// (an error wrapping mcp.ErrServerAnswered): is_error true and one text block
// telling the model not to retry the same call, quoting the server's message
// passed through scrub (nil: unchanged), then shortened and sanitized (see
// sanitize), so a cut never leaves part of a scrubbed secret behind.
func Refusal(toolUseID string, err error, scrub func(string) string) ToolResult {
	say := "The MCP server refused this tool call. Do not retry the same call unchanged."
	msg := refusalMessage(err)
	if scrub != nil {
		msg = scrub(msg)
	}
	if quoted := sanitize(msg); quoted != "" {
		say = "The MCP server refused this tool call: " + quoted + "\nDo not retry the same call unchanged."
	}
	return ToolResult{Type: TypeToolResult, ToolUseID: toolUseID, IsError: true, Content: []Block{textBlock(say)}}
}

// refusalMessage is what the server said: the error's text after the
// sentinel's own words (our framing before them is dropped), without the
// SDK's `calling "method": ` prefix.
func refusalMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if errors.Is(err, mcp.ErrServerAnswered) {
		if _, after, ok := strings.Cut(msg, mcp.ErrServerAnswered.Error()); ok {
			msg = after
		}
	}
	msg = strings.TrimLeft(msg, " :")
	return callingRE.ReplaceAllString(msg, "")
}

var (
	// callingRE matches the go-sdk's prefix on a JSON-RPC error.
	callingRE = regexp.MustCompile(`^calling "[^"]*": `)
	// bearerRE matches an authorization scheme followed by its credential.
	bearerRE = regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[^\s,;"']+`)
	// urlRE matches an absolute URL; only its scheme and host are kept.
	urlRE = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)
	// secretRE matches key=value pairs whose key names a secret.
	secretRE = regexp.MustCompile(`(?i)\b([a-z_-]*(?:key|token|secret|password|passwd|signature|auth)[a-z_-]*)\s*[=:]\s*[^\s,;&"']+`)
)

// sanitize prepares server text for the model: control characters become
// spaces, runs of space collapse, credentials after an auth scheme or a
// secret-named key are redacted, URLs are reduced to scheme and host, and the
// result is cut to maxRefusalMessage bytes with text.Truncate.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = urlRE.ReplaceAllStringFunc(s, origin)
	s = bearerRE.ReplaceAllString(s, "$1 "+text.Redacted)
	s = secretRE.ReplaceAllString(s, "$1="+text.Redacted)
	return text.Truncate(strings.Join(strings.Fields(s), " "), maxRefusalMessage)
}

// origin reduces a URL to scheme://host, dropping user info, path and query.
func origin(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return scheme + "://" + rest
}
