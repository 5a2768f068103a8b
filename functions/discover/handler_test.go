package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/schema"
	"github.com/mcpfn/mcpfn/shared/vault"
)

const serverURL = "https://mcp.example.com/mcp"

// request is a valid request with fields changed; a nil value removes one.
func request(fields map[string]any) []byte {
	return runnertest.Request(map[string]any{"catalog_id": "example", "server_url": serverURL}, fields)
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    string
	}{
		{"no catalog_id", request(map[string]any{"catalog_id": nil}), "catalog_id is required"},
		{"no server_url, none stored", request(map[string]any{"server_url": nil}), `server_url is required: catalog: no stored server URL: catalog "example" keeps none`},
		{"catalog_id too long", request(map[string]any{"catalog_id": strings.Repeat("c", 1025)}), "catalog_id: catalog: invalid catalog id: 1025 bytes, at most 1024"},
		{"bad vault id", request(map[string]any{"vault_ids": []string{"../x"}}), `vault_ids: vault: bad vault id: "../x" has character '/' at byte 2`},
		{"unknown field", []byte(`{"catalog_id":"c","server_url":"https://mcp.example.com/mcp","url":"x"}`), `unknown field "url"`},
		{"wrong type", []byte(`{"catalog_id":"c","server_url":"https://mcp.example.com/mcp","vault_ids":"v"}`), `field "vault_ids": want []string, got JSON string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			got := e.Invoke(t, tt.payload)
			if got.Error == nil || got.Error.Type != "invalid_request_error" || got.Error.Message != tt.want {
				t.Errorf("error = %+v, want invalid_request_error %q", got.Error, tt.want)
			}
			if len(e.server.Configs()) != 0 || len(e.store.failures) != 0 {
				t.Errorf("connected %d times, recorded %v; want neither for a malformed request", len(e.server.Configs()), e.store.failures)
			}
		})
	}
}

func TestDiscoverStores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.Secrets.PutCredentials("mcpfn/vaults/team", vault.Credential{ServerURL: serverURL, Token: "the-token"})
		start := time.Now()
		got := e.Invoke(t, request(map[string]any{"vault_ids": []string{"team"}}))
		if got.Error != nil {
			t.Fatal(got.Error)
		}
		cfg := e.server.Configs()[0]
		if cfg.HTTPClient != mcp.DefaultClient || cfg.BearerToken != "the-token" || cfg.URL != serverURL || cfg.ProtocolVersion != "" {
			t.Errorf("config = %+v, want mcp.DefaultClient and the vault's token", cfg)
		}
		want := []catalog.Discovery{{
			Listing:         exampleListing,
			ProtocolVersion: "2025-11-25",
			ServerName:      "mcpfn-example",
			ServerVersion:   "1.0.0",
			StartedAt:       start,
			Schedule:        &catalog.Schedule{ServerURL: serverURL, VaultIDs: []string{"team"}}, // the recorded interval kept
			SchemaRules:     schema.RulesVersion,
		}}
		if diff := cmp.Diff(want, e.store.puts["example"], cmpopts.IgnoreFields(catalog.Discovery{}, "Define")); diff != "" {
			t.Errorf("stored (-want +got):\n%s", diff)
		}
		if strings.Contains(e.Logs.String(), "the-token") {
			t.Errorf("the token reached the logs:\n%s", e.Logs)
		}
	})
}

func TestFailureIsRecorded(t *testing.T) {
	tests := []struct {
		name       string
		connectErr error
		listErr    error
		wantType   string
	}{
		{name: "unauthorized", connectErr: fmt.Errorf("mcp: connect: %w: 401", mcp.ErrUnauthorized), wantType: "mcp_authentication_failed_error"},
		{name: "unreachable", connectErr: errors.New("dial tcp: connection refused"), wantType: "mcp_connection_failed_error"},
		{name: "cursor loop", listErr: fmt.Errorf("mcp: list: %w: %w: c1", mcp.ErrProtocol, mcp.ErrCursorLoop), wantType: "mcp_protocol_error"},
		{name: "server answered a listing with an error", listErr: fmt.Errorf("mcp: list: %w: method not found", mcp.ErrServerAnswered), wantType: "mcp_protocol_error"},
		{name: "listing timed out", listErr: fmt.Errorf("mcp: list: %w", context.DeadlineExceeded), wantType: "mcp_connection_failed_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				e.server.Err, e.server.listErr = tt.connectErr, tt.listErr
				got := e.Invoke(t, request(nil))
				if got.Error == nil || got.Error.Type != tt.wantType {
					t.Fatalf("error = %+v, want %s", got.Error, tt.wantType)
				}
				want := []catalog.Failure{{ErrorType: tt.wantType, Message: got.Error.Message, At: time.Now()}}
				if diff := cmp.Diff(want, e.store.failures["example"]); diff != "" {
					t.Errorf("recorded failure (-want +got):\n%s", diff)
				}
				if len(e.store.puts) != 0 {
					t.Errorf("stored %v after a failure", e.store.puts)
				}
			})
		})
	}
}

func TestStoreFails(t *testing.T) {
	e := newEnv(t)
	e.store.fail = fmt.Errorf("%w: throttled", catalog.ErrUnavailable)
	got := e.Invoke(t, request(nil))
	if got.Error == nil || got.Error.Type != "internal_error" || strings.Contains(got.Error.Message, "throttled") {
		t.Errorf("error = %+v, want internal_error without the cause", got.Error)
	}
	var warned bool
	for _, r := range e.Logs.Records() {
		warned = warned || r["msg"] == "recording the discovery failure failed"
	}
	if !warned {
		t.Errorf("the failed failure record was not logged:\n%s", e.Logs)
	}
}

func TestRefusedIsBounded(t *testing.T) {
	var many []mcp.Refusal
	for i := range 5000 {
		many = append(many, mcp.Refusal{Name: fmt.Sprintf("tool %d", i), Reason: "name: not a valid tool name"})
	}
	e := newEnv(t)
	e.server.listing = mcp.Listing{Refused: many}
	got := e.Invoke(t, request(nil))
	if got.Error != nil {
		t.Fatal(got.Error)
	}
	if len(got.Result) > 100<<10 {
		t.Errorf("result is %d bytes, want at most 100 KiB", len(got.Result))
	}
	var res Result
	if err := json.Unmarshal(got.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Refused)+res.RefusedOmitted != 5000 || res.RefusedOmitted == 0 {
		t.Errorf("refused %d + omitted %d, want 5000 with some omitted", len(res.Refused), res.RefusedOmitted)
	}
}

// TestRefusalsQuotingTheTokenAreScrubbed: a server that names a tool after
// the credential it was sent gets no copy of it into the result.
func TestRefusalsQuotingTheTokenAreScrubbed(t *testing.T) {
	const token = "tok-quoted-by-the-server"
	e := newEnv(t)
	e.Secrets.PutCredentials("mcpfn/vaults/team", vault.Credential{ServerURL: serverURL, Token: token})
	e.server.listing = mcp.Listing{Refused: []mcp.Refusal{{Name: "has " + token, Reason: `name "has ` + token + `": not a valid tool name`}}}
	got := e.Invoke(t, request(map[string]any{"vault_ids": []string{"team"}}))
	if got.Error != nil {
		t.Fatal(got.Error)
	}
	if strings.Contains(string(got.Result), token) || !strings.Contains(string(got.Result), "[redacted]") {
		t.Errorf("result %s: want the token scrubbed", got.Result)
	}
}

// TestCheckSchemasStopsWithItsContext: checking stops when the operation's
// context ends, so a listing built to be slow to check fails the work item
// instead of eating the reserve; nothing is half-judged.
func TestCheckSchemasStopsWithItsContext(t *testing.T) {
	l := mcp.Listing{Tools: []mcp.Tool{{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := checkSchemas(ctx, schema.NewCache(0), l); !errors.Is(err, context.Canceled) {
		t.Errorf("checkSchemas on an ended context = %v, want context.Canceled", err)
	}
	got, err := checkSchemas(t.Context(), schema.NewCache(0), mcp.Listing{Tools: []mcp.Tool{
		{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "bad", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object","$ref":"#/nowhere"}`)},
	}})
	if err != nil || len(got.Tools) != 1 || got.Tools[0].Name != "ok" || len(got.Refused) != 1 || !strings.HasPrefix(got.Refused[0].Reason, "output_schema: schema refused: dangling-ref") {
		t.Errorf("checkSchemas = %+v, %v; want ok kept and bad refused for its output schema", got, err)
	}
}
