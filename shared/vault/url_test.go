package vault_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/vault"
)

func TestNormalizeURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"already normal", "https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"scheme and host case", "HTTPS://MCP.Example.COM/mcp", "https://mcp.example.com/mcp"},
		{"path case kept", "https://mcp.example.com/MCP", "https://mcp.example.com/MCP"},
		{"https default port", "https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"http default port", "http://mcp.example.com:80/mcp", "http://mcp.example.com/mcp"},
		{"https on port 80 kept", "https://mcp.example.com:80/mcp", "https://mcp.example.com:80/mcp"},
		{"other port kept", "https://mcp.example.com:8443/mcp", "https://mcp.example.com:8443/mcp"},
		{"leading zeros in port", "https://mcp.example.com:0443/mcp", "https://mcp.example.com/mcp"},
		{"trailing slash kept", "https://mcp.example.com/mcp/", "https://mcp.example.com/mcp/"},
		{"empty path is root", "https://mcp.example.com", "https://mcp.example.com/"},
		{"root path", "https://mcp.example.com/", "https://mcp.example.com/"},
		{"escaped path kept", "https://mcp.example.com/a%2Fb/%7Euser", "https://mcp.example.com/a%2Fb/%7Euser"},
		{"query kept as written", "https://mcp.example.com/mcp?b=2&a=1", "https://mcp.example.com/mcp?b=2&a=1"},
		{"empty query dropped", "https://mcp.example.com/mcp?", "https://mcp.example.com/mcp"},
		{"fragment dropped", "https://mcp.example.com/mcp#frag", "https://mcp.example.com/mcp"},
		{"IPv6 host", "http://[::1]:8080/mcp", "http://[::1]:8080/mcp"},
		{"IPv6 host case and default port", "https://[FE80::1]:443/mcp", "https://[fe80::1]/mcp"},
		{"IPv4 host", "http://127.0.0.1:3000/mcp", "http://127.0.0.1:3000/mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vault.NormalizeURL(tt.in)
			if err != nil {
				t.Fatalf("NormalizeURL(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("NormalizeURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeURLErrors(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"empty", ""},
		{"relative", "/mcp"},
		{"no scheme", "mcp.example.com/mcp"},
		{"other scheme", "ftp://mcp.example.com/mcp"},
		{"websocket", "wss://mcp.example.com/mcp"},
		{"opaque", "https:mcp.example.com"},
		{"no host", "https:///mcp"},
		{"user info", "https://user:hunter2@mcp.example.com/mcp"},
		{"port zero", "https://mcp.example.com:0/mcp"},
		{"port too large", "https://mcp.example.com:65536/mcp"},
		{"empty port", "https://mcp.example.com:/mcp"},
		{"space in host", "https://mcp example.com/mcp"},
		{"control character", "https://mcp.example.com/mcp\n"},
		{"password where the port goes", "https://user:hunter2/mcp"}, // the parser quotes ":hunter2"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vault.NormalizeURL(tt.in)
			if !errors.Is(err, vault.ErrBadURL) {
				t.Fatalf("NormalizeURL(%q) = %q, %v; want ErrBadURL", tt.in, got, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error quotes the URL's password: %v", err)
			}
		})
	}
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"https://mcp.example.com/mcp", "HTTP://[::1]:80/a?b#c", "https://x:0443", "http://h/%zz", "https://a@b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		norm, err := vault.NormalizeURL(raw)
		if err != nil {
			if !errors.Is(err, vault.ErrBadURL) {
				t.Fatalf("error %v does not wrap ErrBadURL", err)
			}
			return
		}
		again, err := vault.NormalizeURL(norm)
		if err != nil {
			t.Fatalf("NormalizeURL(%q) = %q, which does not normalise: %v", raw, norm, err)
		}
		if again != norm {
			t.Fatalf("not idempotent: %q → %q → %q", raw, norm, again)
		}
	})
}
