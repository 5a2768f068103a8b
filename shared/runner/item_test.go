package runner_test

import (
	"encoding/base64"
	"net/url"
	"testing"

	"github.com/mcpfn/mcpfn/shared/runner"
)

// TestScrub: the server URL leaves a message as its origin, whatever part
// of it the message quotes; tokens become [redacted].
func TestScrub(t *testing.T) {
	tests := []struct {
		name   string
		server string
		in     string
		want   string
	}{
		{"full URL", "https://mcp.example.com/mcp/sk-path?key=q",
			`Post "https://mcp.example.com/mcp/sk-path?key=q": EOF`, `Post "https://mcp.example.com": EOF`},
		{"query already redacted by package mcp", "https://mcp.example.com/mcp/sk-path?key=q",
			`Post "https://mcp.example.com/mcp/sk-path?[redacted]": EOF`, `Post "https://mcp.example.com?[redacted]": EOF`},
		{"URL without its query", "https://mcp.example.com/mcp/sk-path?key=q",
			`GET https://mcp.example.com/mcp/sk-path: 404`, `GET https://mcp.example.com: 404`},
		{"the path alone", "https://mcp.example.com/mcp/sk-path?key=q",
			`vault v has a credential for the same origin but path /mcp/sk-path/other`, `vault v has a credential for the same origin but path [redacted]/other`},
		{"the query alone", "https://mcp.example.com/mcp?key=q",
			`query key=q refused`, `query [redacted] refused`},
		{"host as given, origin lower-cased", "https://MCP.Example.com/mcp/sk-path",
			`dial https://MCP.Example.com/mcp/sk-path`, `dial https://mcp.example.com`},
		{"escaped and unescaped path", "https://mcp.example.com/a%20b/sk-path",
			`"/a%20b/sk-path" or "/a b/sk-path"`, `"[redacted]" or "[redacted]"`},
		{"a path inside the origin is not touched", "https://api.example.com/api",
			`https://api.example.com refused; https://api.example.com/api?x failed; /api gone`, `https://api.example.com refused; https://api.example.com?x failed; [redacted] gone`},
		{"the root path stays", "https://mcp.example.com/",
			`https://mcp.example.com/ and a/b`, `https://mcp.example.com and a/b`},
		{"no path", "https://mcp.example.com",
			`https://mcp.example.com failed`, `https://mcp.example.com failed`},
		{"the token", "https://mcp.example.com/mcp",
			`Bearer tok-123 rejected at https://mcp.example.com/mcp`, `Bearer [redacted] rejected at https://mcp.example.com`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.server)
			if err != nil {
				t.Fatal(err)
			}
			it := &runner.Item{}
			it.AddSecret("tok-123")
			it.SetServer(u)
			if got := it.Scrub(tt.in); got != tt.want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestAddSecretEncodings: a token is scrubbed in the encodings a server
// may quote it in.
func TestAddSecretEncodings(t *testing.T) {
	const tok = "sk/tok+en=\"1\""
	it := &runner.Item{}
	it.AddSecret(tok)
	for _, form := range []string{
		tok,
		base64.StdEncoding.EncodeToString([]byte(tok)),
		base64.RawURLEncoding.EncodeToString([]byte(tok)),
		url.QueryEscape(tok),
		url.PathEscape(tok),
		`sk/tok+en=\"1\"`,
	} {
		if got := it.Scrub("the server said: " + form + "."); got != "the server said: [redacted]." {
			t.Errorf("Scrub(%q) = %q", form, got)
		}
	}
}

// TestScrubSecretsLeavesTheURL: a tool's own text keeps the server's path;
// only the credential goes.
func TestScrubSecretsLeavesTheURL(t *testing.T) {
	it := &runner.Item{}
	u, _ := url.Parse("https://mcp.example.com/mcp")
	it.SetServer(u)
	it.AddSecret("tok-123")
	if got, want := it.ScrubSecrets("see /mcp/docs; Bearer tok-123"), "see /mcp/docs; Bearer [redacted]"; got != want {
		t.Errorf("ScrubSecrets = %q, want %q", got, want)
	}
}
