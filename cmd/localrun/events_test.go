package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	server      = "http://127.0.0.1:4242/mcp"
	oauthServer = "http://127.0.0.1:4343/mcp"
)

// TestEveryEventIsClassifiedAndPointedAtTheExampleServer reads every file in
// events/ the way make invoke-<event> does.
func TestEveryEventIsClassifiedAndPointedAtTheExampleServer(t *testing.T) {
	files, err := filepath.Glob("../../events/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no events found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			inv, err := readEvent(f)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(f)
			if want, _, _ := strings.Cut(name, "-"); inv.function != want {
				t.Errorf("function %q, want %q (the file name's prefix)", inv.function, want)
			}
			out := inv.withServer(server, oauthServer)
			for _, req := range requests(out.payload) {
				if u, ok := req["server_url"].(string); ok && isPlaceholder(u) {
					t.Errorf("placeholder server_url %q left in %s", u, out.payload)
				}
			}
			want := server
			if inv.namesVault(oauthVault) {
				want = oauthServer
			}
			if strings.Contains(string(inv.payload), "mcp.example.com") && !strings.Contains(string(out.payload), want) {
				t.Errorf("the example server URL %s is not in %s", want, out.payload)
			}
		})
	}
}

func TestWithServer(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"direct", `{"catalog_id":"c","server_url":"https://mcp.example.com/mcp"}`,
			`{"catalog_id":"c","server_url":"` + server + `"}`},
		{"reserved domain without subdomain", `{"server_url":"https://example.org/x","n":12345678901234567890}`,
			`{"n":12345678901234567890,"server_url":"` + server + `"}`}, // numbers keep their digits
		{"real host kept", `{"server_url":"https://mcp.example.community/mcp"}`, `{"server_url":"https://mcp.example.community/mcp"}`},
		{"metadata address kept", `{"server_url":"http://169.254.169.254/latest/"}`, `{"server_url":"http://169.254.169.254/latest/"}`},
		{"not JSON kept", `not json`, `not json`},
		{"sqs bodies", `{"Records":[{"body":"{\"server_url\":\"https://mcp.example.com/mcp\",\"tool_name\":\"t\"}"},{"body":"garbage"}]}`,
			`{"Records":[{"body":"{\"server_url\":\"` + server + `\",\"tool_name\":\"t\"}"},{"body":"garbage"}]}`},
		{"oauth vault", `{"server_url":"https://mcp.example.com/mcp","vault_ids":["other","example-oauth"]}`,
			`{"server_url":"` + oauthServer + `","vault_ids":["other","example-oauth"]}`},
		{"other vault", `{"server_url":"https://mcp.example.com/mcp","vault_ids":["other"]}`,
			`{"server_url":"` + server + `","vault_ids":["other"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := invocation{payload: []byte(tt.in)}.withServer(server, oauthServer)
			if diff := cmp.Diff(tt.want, string(got.payload)); diff != "" {
				t.Errorf("withServer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadEventClassifies(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		file, body string
		want       string
		ids        []string
	}{
		{"a.json", `{"catalog_id":"c","server_url":"u"}`, "discover", []string{"c"}},
		{"a.json", `{"server_url":"u","tool_name":"t","catalog_id":"k"}`, "call", []string{"k"}},
		{"a.json", `{"Records":[{"body":"{\"tool_name\":\"t\"}"}]}`, "call", nil},
		{"my-call.json", `{]`, "call", nil},        // malformed: by name
		{"other.json", `{"x":1}`, "discover", nil}, // unknown: discover refuses it
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.file)
		if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
			t.Fatal(err)
		}
		inv, err := readEvent(path)
		if err != nil {
			t.Fatal(err)
		}
		if inv.function != tt.want {
			t.Errorf("%s %s: function %q, want %q", tt.file, tt.body, inv.function, tt.want)
		}
		if diff := cmp.Diff(tt.ids, inv.catalogIDs()); diff != "" {
			t.Errorf("%s: catalog ids (-want +got):\n%s", tt.body, diff)
		}
	}
	if _, err := readEvent(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("readEvent of a missing file succeeded")
	}
}

func TestDescribeArgs(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"type":"object","properties":{"op":{"type":"string"},"a":{"type":"number"},"tz":{"type":"string"}},"required":["op","a"]}`,
			"a (number), op (string), tz (string, optional)"},
		{`{"type":"object","properties":{"x":{}}}`, "x (any, optional)"},
		{`{"type":"object"}`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := describeArgs(json.RawMessage(tt.schema)); got != tt.want {
			t.Errorf("describeArgs(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

func TestAllowEntry(t *testing.T) {
	got, err := allowEntry("http://127.0.0.1:4242/mcp")
	if err != nil || got != "127.0.0.1/32:4242" {
		t.Errorf("allowEntry = %q, %v; want 127.0.0.1/32:4242", got, err)
	}
	for _, bad := range []string{"http://localhost:4242/mcp", "http://127.0.0.1/mcp", "http://10.0.0.1:80/"} {
		if _, err := allowEntry(bad); err == nil {
			t.Errorf("allowEntry(%q) succeeded", bad)
		}
	}
}
