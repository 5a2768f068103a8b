package e2e

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

const bearer = "e2e-canary-token-7f3a9c"

// closedURL is an MCP URL on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/mcp"
}

// TestWireErrorTypesFromRealCauses makes each wire error type happen for a
// real reason, against mcptest servers of both protocol eras, and checks it
// in every shape a request arrives in: a direct invocation (errorType), an
// SQS record with a task token (SendTaskFailure), and a batch without one
// (retryable records back to the queue, permanent ones to the DLQ).
func TestWireErrorTypesFromRealCauses(t *testing.T) {
	for _, era := range []struct {
		name      string
		stateless bool
		version   string
	}{
		{"stateful", false, "2025-11-25"},
		{"stateless", true, "2026-07-28"},
	} {
		t.Run(era.name, func(t *testing.T) {
			ok := mcptest.NewServer(t, mcptest.Options{Stateless: era.stateless})
			auth := mcptest.NewServer(t, mcptest.Options{Stateless: era.stateless, BearerToken: bearer})
			paged := mcptest.NewServer(t, mcptest.Options{Stateless: era.stateless, PageSize: 1, ExtraTools: 100})
			closed := closedURL(t)
			s := newStack(t, stackOptions{allow: []string{
				allowOnly(t, ok.URL), allowOnly(t, auth.URL), allowOnly(t, paged.URL), allowOnly(t, closed),
			}})
			s.putVault(t, "good", auth.URL, bearer)
			s.putVault(t, "wrong", auth.URL, "not-the-token")

			cases := []struct {
				name   string
				url    string
				vaults []string
				want   string
			}{
				{"anonymous", ok.URL, nil, ""},
				{"bearer from a vault", auth.URL, []string{"good"}, ""},
				{"a vault that does not exist", auth.URL, []string{"missing", "good"}, "invalid_request_error"},
				{"401 without a credential", auth.URL, nil, "mcp_authentication_failed_error"},
				{"403 with the wrong token", auth.URL, []string{"wrong"}, "mcp_authentication_failed_error"},
				{"unreachable port", closed, nil, "mcp_connection_failed_error"},
				{"loopback port outside the allow-list", "http://127.0.0.1:1/mcp", nil, "mcp_egress_denied_error"},
				{"more than 100 pages", paged.URL, nil, "mcp_protocol_error"},
			}
			request := func(i int, token string) map[string]any {
				c := cases[i]
				r := map[string]any{"catalog_id": "c" + string(rune('a'+i)), "server_url": c.url}
				if c.vaults != nil {
					r["vault_ids"] = c.vaults
				}
				if token != "" {
					r["task_token"] = token
				}
				return r
			}

			for i, c := range cases {
				t.Run("direct/"+c.name, func(t *testing.T) {
					res := invoke(t, s.discover, mustJSON(t, request(i, "")))
					if res.ErrorType != c.want {
						t.Fatalf("errorType %q (%s), want %q", res.ErrorType, res.ErrorMessage, c.want)
					}
					sums := summaries(res.Logs)
					if len(sums) != 1 || sums[0].ErrorType != c.want {
						t.Errorf("summary lines %+v, want one with error_type %q", sums, c.want)
					}
				})
				t.Run("task token/"+c.name, func(t *testing.T) {
					before := len(s.tasks.Reports())
					res := invoke(t, s.discover, sqsEvent(t, request(i, "token-"+c.name)))
					if got := batchFailures(t, res); len(got) != 0 {
						t.Errorf("batch item failures %v, want none: the task carries the outcome", got)
					}
					reps := s.tasks.Reports()[before:]
					want := "SendTaskSuccess"
					if c.want != "" {
						want = "SendTaskFailure"
					}
					if len(reps) != 1 || reps[0].Action() != want || reps[0].Error != c.want || reps[0].TaskToken != "token-"+c.name {
						t.Errorf("task reports %+v, want one %s with error %q", reps, want, c.want)
					}
				})
			}

			t.Run("batch without task tokens", func(t *testing.T) {
				var bodies []any
				var wantFailures []string
				wantDead := 0
				for i, c := range cases {
					bodies = append(bodies, request(i, ""))
					switch c.want {
					case "mcp_connection_failed_error", "mcp_protocol_error":
						wantFailures = append(wantFailures, "msg-"+string(rune('0'+i)))
					case "invalid_request_error", "mcp_egress_denied_error", "mcp_authentication_failed_error":
						wantDead++
					}
				}
				res := invoke(t, s.discover, sqsEvent(t, bodies...))
				got := batchFailures(t, res)
				slices.Sort(got)
				if diff := cmp.Diff(wantFailures, got); diff != "" {
					t.Errorf("batch item failures (-want +got):\n%s", diff)
				}
				if dead := s.drainDLQ(t, "discover"); len(dead) != wantDead {
					t.Errorf("DLQ got %d messages, want %d permanently bad records", len(dead), wantDead)
				}
			})

			t.Run("failure keeps the last good catalog", func(t *testing.T) {
				good := map[string]any{"catalog_id": "kept", "server_url": auth.URL, "vault_ids": []string{"good"}}
				if res := invoke(t, s.discover, mustJSON(t, good)); res.ErrorType != "" {
					t.Fatalf("discovery with the credential: %s: %s", res.ErrorType, res.ErrorMessage)
				}
				delete(good, "vault_ids")
				if res := invoke(t, s.discover, mustJSON(t, good)); res.ErrorType != "mcp_authentication_failed_error" {
					t.Fatalf("discovery without the credential: %q, want mcp_authentication_failed_error", res.ErrorType)
				}
				c, err := s.store.Get(t.Context(), "kept")
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Tools) != 10 || c.ProtocolVersion != era.version {
					t.Errorf("catalog after the failure: %d tools at %q, want the 10 stored at %s", len(c.Tools), c.ProtocolVersion, era.version)
				}
				if c.LastFailure == nil || c.LastFailure.ErrorType != "mcp_authentication_failed_error" {
					t.Errorf("last failure %+v, want mcp_authentication_failed_error", c.LastFailure)
				}
			})

			t.Run("call", func(t *testing.T) {
				for _, c := range []struct {
					name, url, tool string
					vaults          []string
					want            string
				}{
					{"echo", ok.URL, "echo", nil, ""},
					{"echo with a vault credential", auth.URL, "echo", []string{"good"}, ""},
					{"401", auth.URL, "echo", nil, "mcp_authentication_failed_error"},
					{"unreachable", closed, "echo", nil, "mcp_connection_failed_error"},
					{"egress denied", "http://127.0.0.1:1/mcp", "echo", nil, "mcp_egress_denied_error"},
				} {
					req := map[string]any{"server_url": c.url, "tool_name": c.tool, "arguments": map[string]any{"text": "hi " + c.name},
						"tool_use_id": "toolu_" + strings.ReplaceAll(c.name, " ", "_")}
					if c.vaults != nil {
						req["vault_ids"] = c.vaults
					}
					res := invoke(t, s.call, mustJSON(t, req))
					if res.ErrorType != c.want {
						t.Errorf("%s: errorType %q (%s), want %q", c.name, res.ErrorType, res.ErrorMessage, c.want)
						continue
					}
					if c.want == "" {
						checkToolResult(t, res.Payload, req["tool_use_id"].(string), false, "hi "+c.name)
					}
				}
			})

			// The canary: the bearer token never reaches a log line.
			for name, f := range map[string]interface{ Logs() []string }{"discover": s.discover, "call": s.call} {
				if logs := strings.Join(f.Logs(), "\n"); strings.Contains(logs, bearer) {
					t.Errorf("the %s logs contain the bearer token", name)
				}
			}
		})
	}
}
