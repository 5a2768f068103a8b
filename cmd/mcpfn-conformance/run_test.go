package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantOut string
	}{
		{"no URL", nil, map[string]string{envScenario: "initialize"}, "usage"},
		{"no scenario", []string{"http://127.0.0.1:1/mcp"}, nil, envScenario + " is not set"},
		{"not loopback", []string{"http://192.0.2.1:1/mcp"}, map[string]string{envScenario: "initialize"}, "is not loopback"},
		{"context not JSON", []string{"http://localhost:1/mcp"}, map[string]string{envScenario: "initialize", envContext: "{"}, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := run(context.Background(), tt.args, env(tt.env), &out); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output %q, want it to mention %q", out.String(), tt.wantOut)
			}
		})
	}
}

func TestRunScenarios(t *testing.T) {
	const token = "conformance-secret-token"
	tests := []struct {
		name        string
		opts        mcptest.Options
		env         map[string]string
		wantCode    int
		wantOut     string
		wantMethods []string // JSON-RPC methods after the handshake
		wantEchoes  int
	}{
		{
			name:     "initialize lists and calls nothing",
			env:      map[string]string{envScenario: "initialize"},
			wantCode: exitOK, wantOut: "scenario initialize done",
			wantMethods: []string{"tools/list", "DELETE"},
		},
		{
			name:     "a scenario's tool missing from the listing fails it",
			env:      map[string]string{envScenario: "tools_call"},
			wantCode: exitFail, wantOut: `tool "add_numbers" was not listed`,
			wantMethods: []string{"tools/list", "DELETE"},
		},
		{
			name: "context tool calls are made with their arguments",
			env: map[string]string{envScenario: "http-custom-headers",
				envContext: `{"toolCalls":[{"name":"echo","arguments":{"text":"hi"}},{"name":"echo","arguments":{"text":"again"}}]}`},
			wantCode: exitOK, wantOut: `called "echo": isError false, 1 block(s) [text]`,
			wantMethods: []string{"tools/list", "tools/call", "tools/call", "DELETE"},
			wantEchoes:  2,
		},
		{
			name:     "an unlisted scenario lists and makes the context's calls",
			env:      map[string]string{envScenario: "some-new-scenario", envContext: `{"toolCalls":[{"name":"echo","arguments":{"text":"x"}}]}`},
			wantCode: exitOK, wantOut: "scenario some-new-scenario done",
			wantMethods: []string{"tools/list", "tools/call", "DELETE"},
			wantEchoes:  1,
		},
		{
			name:     "an auth scenario the server does not challenge lists and calls the first tool",
			env:      map[string]string{envScenario: "auth/metadata-default"},
			wantCode: exitOK, wantOut: "scenario auth/metadata-default done",
			wantMethods: []string{"tools/list", "tools/call", "DELETE"},
		},
		{
			name:     "an auth scenario whose context is not an object is a usage error",
			env:      map[string]string{envScenario: "auth/pre-registration", envContext: `["x"]`},
			wantCode: exitUsage, wantOut: envContext,
		},
		{
			name:     "a failed call that the scenario allows does not fail it",
			env:      map[string]string{envScenario: "sep-2322-client-request-state"},
			wantCode: exitOK, wantOut: `call "test_mrtr_echo_state" failed, which this scenario allows`,
			wantMethods: []string{"tools/list", "tools/call", "tools/call", "tools/call", "tools/call", "DELETE"},
		},
		{
			name:     "bearer token sent",
			opts:     mcptest.Options{BearerToken: token},
			env:      map[string]string{envScenario: "initialize", envToken: token},
			wantCode: exitOK, wantOut: "scenario initialize done",
			wantMethods: []string{"tools/list", "DELETE"},
		},
		{
			name:     "no token for a server that wants one",
			opts:     mcptest.Options{BearerToken: token},
			env:      map[string]string{envScenario: "initialize"},
			wantCode: exitFail, wantOut: "unauthorized",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mcptest.NewServer(t, tt.opts)
			var out bytes.Buffer
			code := run(context.Background(), []string{srv.URL}, env(tt.env), &out)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s", code, tt.wantCode, out.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output does not mention %q:\n%s", tt.wantOut, out.String())
			}
			if strings.Contains(out.String(), token) {
				t.Errorf("output shows the bearer token:\n%s", out.String())
			}
			methods := srv.Counters.Methods()
			if i := slices.Index(methods, "notifications/initialized"); i >= 0 {
				methods = methods[i+1:]
			} else {
				methods = nil
			}
			if tt.wantMethods != nil && !slices.Equal(methods, tt.wantMethods) {
				t.Errorf("methods after the handshake %v, want %v", methods, tt.wantMethods)
			}
			if got := srv.Counters.CallCount("echo"); got != tt.wantEchoes {
				t.Errorf("echo ran %d times, want %d", got, tt.wantEchoes)
			}
		})
	}
}
