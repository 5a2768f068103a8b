package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/rietest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// placeholderURL is the server every sample event names; the tests point it
// at the example server.
const placeholderURL = "https://mcp.example.com/mcp"

// eventCheck is what one events/ file must do.
type eventCheck struct {
	// errorType is the Lambda errorType of a direct invocation; "" expects
	// a result (for an SQS batch: a batch response).
	errorType string
	// logged are the error_type values of the summary lines, in any order.
	logged []string
	check  func(t *testing.T, s *stack, era string, res rietest.Result, reports []runnertest.TaskReport)
}

var eventChecks = map[string]eventCheck{
	"discover-direct.json": {check: func(t *testing.T, s *stack, era string, res rietest.Result, reports []runnertest.TaskReport) {
		var r struct {
			CatalogID       string `json:"catalog_id"`
			ToolCount       int    `json:"tool_count"`
			ProtocolVersion string `json:"protocol_version"`
			Server          struct{ Name string }
		}
		decode(t, res.Payload, &r)
		want := struct {
			CatalogID       string `json:"catalog_id"`
			ToolCount       int    `json:"tool_count"`
			ProtocolVersion string `json:"protocol_version"`
			Server          struct{ Name string }
		}{"example", 3, era, struct{ Name string }{"mcpfn-example"}}
		if diff := cmp.Diff(want, r); diff != "" {
			t.Errorf("discover result (-want +got):\n%s", diff)
		}
		checkCatalog(t, s, "example", era)
	}},
	"discover-egress-denied-metadata.json": {
		errorType: "mcp_egress_denied_error",
		logged:    []string{"mcp_egress_denied_error"},
		check: func(t *testing.T, s *stack, _ string, _ rietest.Result, _ []runnertest.TaskReport) {
			// Nothing is stored but, at most, the failure itself.
			c, err := s.store.Get(t.Context(), "metadata")
			switch {
			case errors.Is(err, catalog.ErrNotFound):
			case err != nil:
				t.Errorf("catalog metadata: %v", err)
			case c.Version != "" || len(c.Tools) != 0 || c.LastFailure == nil || c.LastFailure.ErrorType != "mcp_egress_denied_error":
				t.Errorf("catalog metadata %+v, want no tools and the egress failure recorded", c)
			}
		},
	},
	"discover-malformed-missing-server-url.json": {
		errorType: "invalid_request_error",
		logged:    []string{"invalid_request_error"},
	},
	"discover-sqs-batch.json": {check: func(t *testing.T, s *stack, era string, res rietest.Result, reports []runnertest.TaskReport) {
		if got := batchFailures(t, res); len(got) != 0 {
			t.Errorf("batch item failures %v, want none", got)
		}
		checkOutcomes(t, res, "succeeded", "succeeded")
		checkCatalog(t, s, "example", era)
		checkCatalog(t, s, "example-mirror", era)
	}},
	"discover-sweep.json": {check: func(t *testing.T, s *stack, _ string, res rietest.Result, _ []runnertest.TaskReport) {
		// The catalogs the discover events stored are due in an hour.
		if got := strings.TrimSpace(string(res.Payload)); got != `{"swept":{"due":0,"enqueued":0,"backing_off":0}}` {
			t.Errorf("sweep answered %q, want nothing due", got)
		}
	}},
	"discover-sqs-task-token.json": {check: func(t *testing.T, s *stack, era string, res rietest.Result, reports []runnertest.TaskReport) {
		if got := batchFailures(t, res); len(got) != 0 {
			t.Errorf("batch item failures %v, want none", got)
		}
		checkOutcomes(t, res, "task_succeeded")
		rep := onlyReport(t, reports, "SendTaskSuccess")
		var out struct {
			ToolCount       int    `json:"tool_count"`
			ProtocolVersion string `json:"protocol_version"`
		}
		decode(t, rep.Output, &out)
		if out.ToolCount != 3 || out.ProtocolVersion != era {
			t.Errorf("task output %s, want 3 tools at %s", rep.Output, era)
		}
	}},
	"discover-oauth.json": {check: func(t *testing.T, s *stack, era string, res rietest.Result, _ []runnertest.TaskReport) {
		checkOAuthSummary(t, res)
		checkCatalog(t, s, "example-oauth", era)
		f := oauthFixtureOf(t, s)
		if got := f.as.SpentRefreshTokens(); len(got) != 1 || got[0] != f.seeded {
			t.Errorf("the authorization server spent %d refresh tokens, want the vault's one, once", len(got))
		}
		c := f.credential(t, s)
		if c.Refresh.RefreshToken == f.seeded || c.Lease != nil || !c.ExpiresAt.After(time.Now()) {
			t.Errorf("vault after the refresh: rotated %v, lease %v, expires_at %s; want a rotated refresh token, no lease, a fresh token",
				c.Refresh.RefreshToken != f.seeded, c.Lease != nil, c.ExpiresAt)
		}
	}},
	"call-oauth.json": {check: func(t *testing.T, s *stack, _ string, res rietest.Result, _ []runnertest.TaskReport) {
		checkOAuthSummary(t, res)
		checkToolResult(t, res.Payload, "toolu_01OAuthWordStats000000000", false, "4 words, 25 characters, 2 lines")
		if n := len(oauthFixtureOf(t, s).as.TokenRequests()); n != 1 {
			t.Errorf("the authorization server had %d token requests, want only discover-oauth's: the call uses the stored token", n)
		}
	}},
	"call-direct.json": {check: func(t *testing.T, _ *stack, _ string, res rietest.Result, _ []runnertest.TaskReport) {
		checkToolResult(t, res.Payload, "toolu_01A09q90qw90lq917835lq9", false, "5")
	}},
	"call-direct-no-catalog.json": {check: func(t *testing.T, _ *stack, _ string, res rietest.Result, _ []runnertest.TaskReport) {
		checkToolResult(t, res.Payload, "toolu_01WordStats0000000000000", false, "4 words, 18 characters, 2 lines")
	}},
	// The continuation samples against a server and a key with no pending
	// call (functions/call's golden test gives them one): a poll is a plain
	// call, input responses and a cancel are refused.
	"call-pending-poll.json": {check: func(t *testing.T, _ *stack, _ string, res rietest.Result, _ []runnertest.TaskReport) {
		checkToolResult(t, res.Payload, "", false, "42")
	}},
	"call-input-responses.json": {
		errorType: "invalid_request_error",
		logged:    []string{"invalid_request_error"},
	},
	"call-cancel.json": {
		errorType: "invalid_request_error",
		logged:    []string{"invalid_request_error"},
	},
	"call-malformed-arguments-not-object.json": {
		errorType: "invalid_request_error",
		logged:    []string{"invalid_request_error"},
	},
	"call-malformed-unknown-field.json": {
		errorType: "invalid_request_error",
		logged:    []string{"invalid_request_error"},
	},
	"call-tool-not-in-catalog.json": {
		errorType: "invalid_request_error",
		logged:    []string{"invalid_request_error"},
	},
	"call-sqs-batch.json": {check: func(t *testing.T, _ *stack, _ string, res rietest.Result, _ []runnertest.TaskReport) {
		if got := batchFailures(t, res); len(got) != 0 {
			t.Errorf("batch item failures %v, want none", got)
		}
		checkOutcomes(t, res, "succeeded", "succeeded")
	}},
	"call-sqs-batch-mixed.json": {
		logged: []string{"invalid_request_error", "mcp_egress_denied_error"},
		check: func(t *testing.T, s *stack, _ string, res rietest.Result, reports []runnertest.TaskReport) {
			if got := batchFailures(t, res); len(got) != 0 {
				t.Errorf("batch item failures %v, want none: permanent failures go to the DLQ", got)
			}
			checkOutcomes(t, res, "succeeded", "dead_lettered", "dead_lettered")
			dead := s.drainDLQ(t, "call")
			if len(dead) != 2 {
				t.Fatalf("DLQ holds %d messages, want the 2 permanently bad records: %q", len(dead), dead)
			}
			for _, body := range dead {
				if !strings.Contains(body, "tool_input") && !strings.Contains(body, "https://127.0.0.1/mcp") {
					t.Errorf("unexpected DLQ message %s", body)
				}
			}
		},
	},
	"call-sqs-task-token.json": {check: func(t *testing.T, s *stack, _ string, res rietest.Result, reports []runnertest.TaskReport) {
		if got := batchFailures(t, res); len(got) != 0 {
			t.Errorf("batch item failures %v, want none", got)
		}
		checkOutcomes(t, res, "task_succeeded")
		rep := onlyReport(t, reports, "SendTaskSuccess")
		checkToolResult(t, rep.Output, "toolu_01TaskToken0000000000001", false, "0.25")
	}},
}

// TestEveryEvent drives every file in events/ through the real binary it is
// for, against the example server in both protocol eras, and checks the
// result, the stored catalog, task reports, the DLQ and the logs' error_type.
func TestEveryEvent(t *testing.T) {
	files, err := filepath.Glob("../events/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	// Discoveries first: the calls name the catalog they store.
	slices.SortStableFunc(files, func(a, b string) int {
		return strings.Compare(functionOf(b), functionOf(a))
	})
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for name := range eventChecks {
		if !slices.Contains(names, name) {
			t.Errorf("eventChecks names %s, which is not in events/", name)
		}
	}

	for _, era := range []struct {
		name      string
		stateless bool
		version   string
	}{
		{"stateful", false, "2025-11-25"},
		{"stateless", true, "2026-07-28"},
	} {
		t.Run(era.name, func(t *testing.T) {
			server := startExampleServer(t, era.stateless)
			as := oauthtest.NewServer(t, oauthtest.Options{})
			s := newStack(t, stackOptions{allow: []string{allowOnly(t, server), as.AllowEntry()}})
			putOAuthVault(t, s, as, server)
			for _, f := range files {
				name := filepath.Base(f)
				t.Run(name, func(t *testing.T) {
					want, ok := eventChecks[name]
					if !ok {
						t.Fatalf("%s has no entry in eventChecks: every sample event must be checked", name)
					}
					raw, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					if n := strings.Count(string(raw), "example.com"); n != strings.Count(string(raw), placeholderURL) {
						t.Fatalf("%s names an example.com URL other than %s", name, placeholderURL)
					}
					payload := []byte(strings.ReplaceAll(string(raw), placeholderURL, server))
					before := len(s.tasks.Reports())
					res := invoke(t, s.function(functionOf(f)), payload)
					if res.ErrorType == rietest.TimedOutType {
						t.Fatalf("the function timed out:\n%s", strings.Join(res.Logs, "\n"))
					}
					if res.ErrorType != want.errorType {
						t.Fatalf("errorType %q (%s), want %q; result %s", res.ErrorType, res.ErrorMessage, want.errorType, res.Payload)
					}
					var logged []string
					for _, sum := range summaries(res.Logs) {
						if sum.ErrorType != "" {
							logged = append(logged, sum.ErrorType)
						}
					}
					slices.Sort(logged)
					if diff := cmp.Diff(want.logged, logged, cmpEmpty); diff != "" {
						t.Errorf("logged error_type (-want +got):\n%s\nlogs:\n%s", diff, strings.Join(res.Logs, "\n"))
					}
					if want.check != nil {
						want.check(t, s, era.version, res, s.tasks.Reports()[before:])
					}
				})
			}
		})
	}
}

// cmpEmpty treats nil and empty slices alike.
var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

// functionOf is the function an event file is for: its name's prefix.
func functionOf(path string) string {
	fn, _, _ := strings.Cut(filepath.Base(path), "-")
	return fn
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func checkCatalog(t *testing.T, s *stack, id, era string) {
	t.Helper()
	c, err := s.store.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("catalog %s: %v", id, err)
	}
	var names []string
	for _, tool := range c.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"calculate", "current_time", "word_stats"}, names); diff != "" {
		t.Errorf("catalog %s tools (-want +got):\n%s", id, diff)
	}
	if c.ProtocolVersion != era || c.ServerName != "mcpfn-example" {
		t.Errorf("catalog %s: protocol %q server %q, want %q mcpfn-example", id, c.ProtocolVersion, c.ServerName, era)
	}
}

func checkOutcomes(t *testing.T, res rietest.Result, want ...string) {
	t.Helper()
	var got []string
	for _, s := range summaries(res.Logs) {
		got = append(got, s.Outcome)
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("work item outcomes (-want +got):\n%s\nlogs:\n%s", diff, strings.Join(res.Logs, "\n"))
	}
}

// toolResult is an Anthropic tool_result block.
type toolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func checkToolResult(t *testing.T, payload []byte, toolUseID string, isError bool, text string) {
	t.Helper()
	var r toolResult
	decode(t, payload, &r)
	if r.Type != "tool_result" || r.ToolUseID != toolUseID || r.IsError != isError || len(r.Content) == 0 {
		t.Fatalf("tool_result %s, want tool_use_id %s is_error %v", payload, toolUseID, isError)
	}
	if c := r.Content[0]; c.Type != "text" || c.Text != text {
		t.Errorf("first block %+v, want text %q", c, text)
	}
}

// onlyReport returns the one task report since the check began.
func onlyReport(t *testing.T, reps []runnertest.TaskReport, action string) runnertest.TaskReport {
	t.Helper()
	if len(reps) != 1 || reps[0].Action() != action {
		t.Fatalf("task reports %+v, want one %s", reps, action)
	}
	if !strings.HasPrefix(reps[0].TaskToken, "AQCE") {
		t.Errorf("task token %q is not the event's", reps[0].TaskToken)
	}
	return reps[0]
}

// oauthVaultID is the vault the OAuth samples name.
const oauthVaultID = "example-oauth"

// oauthFixture is a stack's OAuth vault: its authorization server and the
// refresh token it was seeded with.
type oauthFixture struct {
	as     *oauthtest.Server
	seeded string
}

var oauthFixtures sync.Map // *stack → *oauthFixture

// putOAuthVault stores the vault example-oauth for serverURL: an mcp_oauth
// credential whose access token expired an hour ago, with a live refresh
// token at as.
func putOAuthVault(t *testing.T, s *stack, as *oauthtest.Server, serverURL string) {
	t.Helper()
	f := &oauthFixture{as: as, seeded: as.IssueRefreshToken()}
	vaulttest.CreateSecret(t, s.secrets, s.secretsPrefix+oauthVaultID, vault.Credential{
		Type: vault.TypeMCPOAuth, ServerURL: serverURL,
		Token: "at-expired-e2e", ExpiresAt: time.Now().Add(-time.Hour),
		Refresh: &vault.Refresh{TokenEndpoint: as.TokenURL, ClientID: as.Options.ClientID, RefreshToken: f.seeded, Auth: vault.EndpointAuth{Type: "none"}},
	})
	oauthFixtures.Store(s, f)
}

func oauthFixtureOf(t *testing.T, s *stack) *oauthFixture {
	t.Helper()
	f, ok := oauthFixtures.Load(s)
	if !ok {
		t.Fatal("the stack has no OAuth vault")
	}
	return f.(*oauthFixture)
}

// credential reads the vault's one credential (AWSCURRENT named: moto
// answers a request without a stage from the version last put).
func (f *oauthFixture) credential(t *testing.T, s *stack) vault.Credential {
	t.Helper()
	out, err := s.secrets.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(s.secretsPrefix + oauthVaultID), VersionStage: aws.String("AWSCURRENT"),
	})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := vault.Parse([]byte(aws.ToString(out.SecretString)))
	if err != nil || len(creds) != 1 || creds[0].Refresh == nil {
		t.Fatalf("vault %s: %v (%d credentials)", oauthVaultID, err, len(creds))
	}
	return creds[0]
}

// checkOAuthSummary checks the work item used the OAuth vault.
func checkOAuthSummary(t *testing.T, res rietest.Result) {
	t.Helper()
	for _, l := range res.Logs {
		var line struct {
			Msg            string `json:"msg"`
			Credential     string `json:"credential"`
			CredentialType string `json:"credential_type"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "work item" {
			if line.Credential != "vault:"+oauthVaultID || line.CredentialType != vault.TypeMCPOAuth {
				t.Errorf("summary credential %q type %q, want vault:%s %s", line.Credential, line.CredentialType, oauthVaultID, vault.TypeMCPOAuth)
			}
			return
		}
	}
	t.Error("no summary line")
}
