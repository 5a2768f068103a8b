package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestNoURLPathLeaves: a key in a URL's path leaves neither function, in
// no log line, answer, task failure or DLQ message attribute, when it sits
// in a vault credential's URL (same origin, another path: the credential
// hint fires) or in a server URL without a host. Each request runs direct,
// with a task token, and in a batch without one (to the DLQ).
func TestNoURLPathLeaves(t *testing.T) {
	const canary = "sk-CANARY-9d2f41"
	srv := mcptest.NewServer(t, mcptest.Options{BearerToken: bearer})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, srv.URL)}})
	s.putVault(t, "near", strings.TrimSuffix(srv.URL, "/mcp")+"/mcp/"+canary+"-vault", bearer)

	cases := []struct {
		name, url string
		vaults    []string
		want      string
	}{
		{"vault credential for another path", srv.URL, []string{"near"}, "mcp_authentication_failed_error"},
		{"server URL without a host", "https:///" + canary + "-hostless…/mcp", nil, "invalid_request_error"}, // "…" prints escaped
		{"server URL without a host, a space", "https:///" + canary + " hostless/mcp?q=1", nil, "invalid_request_error"},
		{"server URL without a host, ASCII", "https:///" + canary + "-hostless/mcp", nil, "invalid_request_error"},
	}
	request := func(fn string, i int, token string) map[string]any {
		c := cases[i]
		r := map[string]any{"server_url": c.url}
		if fn == "discover" {
			r["catalog_id"] = fmt.Sprintf("canary-%d", i)
		} else {
			r["tool_name"], r["arguments"], r["tool_use_id"] = "echo", map[string]any{"text": "hi"}, fmt.Sprintf("toolu_canary_%d_%s", i, token)
		}
		if c.vaults != nil {
			r["vault_ids"] = c.vaults
		}
		if token != "" {
			r["task_token"] = token
		}
		return r
	}
	leaks := func(t *testing.T, where string, texts ...string) {
		t.Helper()
		for _, s := range texts {
			if strings.Contains(s, canary) {
				t.Errorf("%s shows the URL's path: %s", where, s)
			}
		}
	}
	hinted := false
	for _, fn := range []string{"discover", "call"} {
		f := s.function(fn)
		for i, c := range cases {
			t.Run(fn+"/direct/"+c.name, func(t *testing.T) {
				res := invoke(t, f, mustJSON(t, request(fn, i, "")))
				if res.ErrorType != c.want {
					t.Fatalf("errorType %q (%s), want %q", res.ErrorType, res.ErrorMessage, c.want)
				}
				leaks(t, "the answer", res.ErrorMessage, string(res.Payload))
				leaks(t, "a log line", res.Logs...)
				for _, l := range res.Logs {
					hinted = hinted || strings.Contains(l, "credential hint")
				}
			})
			t.Run(fn+"/task token/"+c.name, func(t *testing.T) {
				before := len(s.tasks.Reports())
				res := invoke(t, f, sqsEvent(t, request(fn, i, "tok")))
				leaks(t, "a log line", res.Logs...)
				reps := s.tasks.Reports()[before:]
				if len(reps) != 1 || reps[0].Error != c.want {
					t.Fatalf("task reports %+v, want one failure %q", reps, c.want)
				}
				leaks(t, "the task failure", reps[0].Cause, reps[0].Error)
			})
		}
		t.Run(fn+"/batch to the DLQ", func(t *testing.T) {
			var bodies []any
			for i := range cases {
				bodies = append(bodies, request(fn, i, ""))
			}
			res := invoke(t, f, sqsEvent(t, bodies...))
			if got := batchFailures(t, res); len(got) != 0 {
				t.Errorf("batch item failures %v, want none: every record is permanently bad", got)
			}
			leaks(t, "a log line", res.Logs...)
			dead := runnertest.Drain(t, s.sqs, s.dlq[fn], len(cases))
			if len(dead) != len(cases) {
				t.Fatalf("DLQ got %d messages, want %d", len(dead), len(cases))
			}
			for _, m := range dead {
				if len(m.Attributes) == 0 {
					t.Errorf("DLQ message without attributes: %+v", m)
				}
				for k, v := range m.Attributes {
					leaks(t, "DLQ attribute "+k, v)
				}
			}
		})
	}
	if !hinted {
		t.Error("no credential hint was logged: the vault case tests nothing")
	}
}
