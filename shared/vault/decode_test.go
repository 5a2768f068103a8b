package vault

import (
	"errors"
	"strings"
	"testing"
)

// TestParseMessages pins what a malformed vault's error says: the
// credential and block at fault, the allowed names, never a value.
func TestParseMessages(t *testing.T) {
	const oauthHead = `{"type":"mcp_oauth","server_url":"https://mcp.example.com/mcp","access_token":"at"`
	tests := []struct {
		name, doc, want string
	}{
		{"case variant", `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":"t","TOKEN":"secret"}]}`,
			`credential 0: unknown field "TOKEN" (allowed: server_url, token, type)`},
		{"unknown name in a block", `{"credentials":[` + oauthHead + `,"refresh":{"token_endpoint":"https://as.example.com/t","client_id":"c","refresh_token":"r","extra":1}}]}`,
			`credential 0: refresh: unknown field "extra" (allowed: client_id, refresh_token, resource, scope, token_endpoint, token_endpoint_auth)`},
		{"unknown name not shown", `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":"t","sk-secret-value":1}]}`,
			`credential 0: unknown field (name not shown)`},
		{"repeated name in a block", `{"credentials":[` + oauthHead + `,"refresh_lease":{"holder":"h","holder":"i"}}]}`,
			`credential 0: refresh_lease: field "holder" given twice`},
		{"wrong kind", `{"credentials":[{"server_url":1,"token":"t"}]}`, `credential 0: field "server_url" is number, want string`},
		{"lone surrogate in a token", `{"credentials":[{"server_url":"https://mcp.example.com/mcp","token":"\ud800"}]}`, `lone surrogate escape`},
		{"not JSON", `{"credentials":[}`, `not JSON (syntax error at byte`},
		{"trailing data", `{"credentials":[]} {}`, `data after the JSON object`},
		{"unknown type", `{"credentials":[{"type":"basic","server_url":"https://mcp.example.com/mcp"}]}`, `credential 0: type must be`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if !errors.Is(err, ErrVaultMalformed) {
				t.Fatalf("Parse error = %v, want ErrVaultMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Parse error %q quotes the document", err)
			}
		})
	}
}
