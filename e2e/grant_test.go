package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/rietest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// grantFixture is an MCP server that accepts only tokens of an
// authorization server, beside a stack whose call function may use it.
type grantFixture struct {
	as  *oauthtest.Server
	mcp string // the MCP endpoint
	s   *stack
}

func newGrantFixture(t *testing.T, o oauthtest.Options, so stackOptions) *grantFixture {
	t.Helper()
	as := oauthtest.NewServer(t, o)
	h, _ := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.Handle("/mcp", oauthtest.RequireBearer(as, srv.URL+"/.well-known/oauth-protected-resource/mcp", "", h))
	f := &grantFixture{as: as, mcp: srv.URL + "/mcp"}
	so.allow = append(so.allow, as.AllowEntry(), allowOnly(t, f.mcp))
	f.s = newStack(t, so)
	return f
}

// putExpired creates vault id with an mcp_oauth credential for the MCP
// server whose access token has expired and whose refresh token is rt.
func (f *grantFixture) putExpired(t *testing.T, id, rt string) {
	t.Helper()
	vaulttest.CreateSecret(t, f.s.secrets, f.s.secretsPrefix+id, vault.Credential{
		Type: vault.TypeMCPOAuth, ServerURL: f.mcp, Token: "at-expired-" + id, ExpiresAt: time.Now().Add(-time.Hour).Truncate(time.Second),
		Refresh: &vault.Refresh{TokenEndpoint: f.as.TokenURL, ClientID: f.as.Options.ClientID, RefreshToken: rt, Auth: vault.EndpointAuth{Type: "none"}},
	})
}

// stored reads vault id's one credential (AWSCURRENT named).
func (f *grantFixture) stored(t *testing.T, id string) vault.Credential {
	t.Helper()
	out, err := f.s.secrets.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(f.s.secretsPrefix + id), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := vault.Parse([]byte(aws.ToString(out.SecretString)))
	if err != nil || len(creds) != 1 || creds[0].Refresh == nil {
		t.Fatalf("vault %s: %v", id, err)
	}
	return creds[0]
}

// versions counts every version of vault id's secret, deprecated included.
func (f *grantFixture) versions(t *testing.T, id string) int {
	t.Helper()
	out, err := f.s.secrets.ListSecretVersionIds(t.Context(), &secretsmanager.ListSecretVersionIdsInput{
		SecretId: aws.String(f.s.secretsPrefix + id), IncludeDeprecated: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Versions)
}

func grantCall(serverURL, vaultID, toolUseID string) map[string]any {
	return map[string]any{"server_url": serverURL, "tool_name": "echo", "arguments": map[string]any{"text": "hi " + toolUseID},
		"vault_ids": []string{vaultID}, "tool_use_id": toolUseID}
}

// TestDeadGrantAcrossInstances: 50 records on a revoked grant, five SQS
// batches of ten shared by two call processes running at once, reach the
// authorization server at most once and write at most two secret
// versions (the lease and the dead grant); every record fails with
// mcp_authentication_failed_error (dead-lettered, acknowledged).
func TestDeadGrantAcrossInstances(t *testing.T) {
	f := newGrantFixture(t, oauthtest.Options{TokenDelay: 300 * time.Millisecond}, stackOptions{timeout: time.Minute})
	rt := f.as.IssueRefreshToken()
	f.as.Revoke(rt)
	f.putExpired(t, "dead", rt)
	before := f.versions(t, "dead")
	procs := []*rietest.Function{f.s.call, rietest.StartFunction(t, f.s.callConfig)}

	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for p, proc := range procs {
		wg.Go(func() {
			for b := p; b < 5; b += 2 {
				var bodies []any
				for i := range 10 {
					bodies = append(bodies, grantCall(f.mcp, "dead", fmt.Sprintf("toolu_dead_%d_%d", b, i)))
				}
				res, err := proc.Invoke(t.Context(), sqsEvent(t, bodies...))
				if err != nil {
					t.Errorf("batch %d: %v", b, err)
					continue
				}
				if got := batchFailures(t, res); len(got) != 0 {
					t.Errorf("batch %d: batch item failures %v, want none (dead-lettered)", b, got)
				}
				mu.Lock()
				for _, s := range summaries(res.Logs) {
					outcomes[s.Outcome+" "+s.ErrorType]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if want := map[string]int{"dead_lettered mcp_authentication_failed_error": 50}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
	if n := len(f.as.TokenRequests()); n > 1 {
		t.Errorf("%d token requests, want at most 1", n)
	}
	if n := f.versions(t, "dead") - before; n > 2 {
		t.Errorf("%d secret versions written, want at most 2", n)
	}
	c := f.stored(t, "dead")
	if c.Dead == nil || c.Dead.Error != "invalid_grant" || c.Lease != nil {
		t.Errorf("stored dead grant %+v, lease %v; want invalid_grant, no lease", c.Dead, c.Lease)
	}
	dlq := f.s.drainDLQ(t, "call")
	if len(dlq) != 50 {
		t.Errorf("%d dead-lettered, want 50", len(dlq))
	}
}

// TestGrantedRefreshOddExpiresIn: a token endpoint that grants the refresh
// but writes expires_in oddly: the call works, the vault holds the rotated
// refresh token (live at the server), and the next call works.
func TestGrantedRefreshOddExpiresIn(t *testing.T) {
	f := newGrantFixture(t, oauthtest.Options{}, stackOptions{})
	for i, raw := range []string{"3599.5", "3.6e3", `"3600"`, `"3600s"`, "absent", "0", "-5"} {
		t.Run(raw, func(t *testing.T) {
			f.as.SetExpiresInJSON(raw)
			id := fmt.Sprintf("odd-%d", i)
			rt := f.as.IssueRefreshToken()
			f.putExpired(t, id, rt)
			for n := range 2 {
				tid := fmt.Sprintf("toolu_odd_%d_%d", i, n)
				res := invoke(t, f.s.call, mustJSON(t, grantCall(f.mcp, id, tid)))
				if res.ErrorType != "" {
					t.Fatalf("call %d: %s: %s", n, res.ErrorType, res.ErrorMessage)
				}
				checkToolResult(t, res.Payload, tid, false, "hi "+tid)
			}
			c := f.stored(t, id)
			if c.Refresh.RefreshToken == rt || !f.as.Valid(c.Token) || !c.ExpiresAt.After(time.Now()) {
				t.Fatalf("stored: rotated %t, access token valid %t, expires %s", c.Refresh.RefreshToken != rt, f.as.Valid(c.Token), c.ExpiresAt)
			}
			if !slices.Contains(f.as.SpentRefreshTokens(), rt) {
				t.Errorf("the seeded refresh token was not spent")
			}
			p, _ := guard.NewPolicy(f.as.AllowEntry())
			cl := &oauth.Client{Policy: p}
			if _, err := cl.Refresh(t.Context(), oauth.Endpoint{TokenURL: f.as.TokenURL, ClientID: f.as.Options.ClientID, Auth: oauth.Auth{Method: oauth.AuthNone}}, c.Refresh.RefreshToken); err != nil {
				t.Errorf("the stored refresh token does not work at the server: %v", err)
			}
		})
	}
}

// secretsProxy forwards to moto, except that a PutSecretValue the stall
// predicate picks is held until its client gives up.
type secretsProxy struct {
	*httptest.Server
	stall   atomic.Pointer[func(body []byte) bool]
	stalled atomic.Int32
}

func newSecretsProxy(t *testing.T) *secretsProxy {
	t.Helper()
	u, err := url.Parse(awstest.SharedMoto(t).Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	p := &secretsProxy{}
	forward := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if st := p.stall.Load(); st != nil && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".PutSecretValue") && (*st)(body) {
			p.stalled.Add(1)
			<-r.Context().Done()
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// TestStalledVaultWrite: a Secrets Manager whose writes stall. Three
// records: one with a fresh static token, one whose OAuth credential must
// be refreshed, one anonymous. The invocation answers within its deadline
// with the finished records acknowledged.
//   - The lease write stalls: nothing is spent; the record comes back to
//     the queue, and redelivered once writes answer, it succeeds.
//   - The write-back after the grant stalls: the token granted is not
//     used; the record fails with mcp_authentication_failed_error saying
//     it could not be stored.
func TestStalledVaultWrite(t *testing.T) {
	proxy := newSecretsProxy(t)
	// Short enough that a write-back holding on for 10 s past the budget
	// would outlive the invocation.
	const timeout = 10 * time.Second
	static := mcptest.NewServer(t, mcptest.Options{BearerToken: "static-e2e"})
	anon := startExampleServer(t, true)
	f := newGrantFixture(t, oauthtest.Options{}, stackOptions{timeout: timeout, allow: []string{allowOnly(t, static.URL), allowOnly(t, anon)}, env: []string{
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + proxy.URL,
		"MCPFN_OPERATION_TIMEOUT=4s",
		"MCPFN_RESERVE=4s",
	}})
	f.s.putVault(t, "static", static.URL, "static-e2e")
	batch := func(id, tag string) []byte {
		return sqsEvent(t,
			grantCall(static.URL, "static", "toolu_static_"+tag),
			grantCall(f.mcp, id, "toolu_oauth_"+tag),
			map[string]any{"server_url": anon, "tool_name": "echo", "arguments": map[string]any{"text": "x"}, "tool_use_id": "toolu_anon_" + tag})
	}
	run := func(t *testing.T, id, tag string) rietest.Result {
		t.Helper()
		start := time.Now()
		res := invoke(t, f.s.call, batch(id, tag))
		if took := time.Since(start); took >= timeout-time.Second {
			t.Errorf("the invocation answered after %s, at its %s deadline", took, timeout)
		}
		if proxy.stalled.Load() == 0 {
			t.Fatal("the proxy stalled nothing: the test did not test a slow Secrets Manager")
		}
		return res
	}
	outcome := func(res rietest.Result) map[string]string {
		out := map[string]string{}
		for _, s := range summaries(res.Logs) {
			out[s.WorkItem] = strings.TrimSpace(s.Outcome + " " + s.ErrorType)
		}
		return out
	}

	t.Run("lease write", func(t *testing.T) {
		proxy.stalled.Store(0)
		f.putExpired(t, "lease", f.as.IssueRefreshToken())
		stall := func([]byte) bool { return true }
		proxy.stall.Store(&stall)
		requests := len(f.as.TokenRequests())
		res := run(t, "lease", "lease")
		if got := batchFailures(t, res); !slices.Equal(got, []string{"msg-1"}) {
			t.Errorf("batch item failures %v, want [msg-1]; outcomes %v", got, outcome(res))
		}
		if got := outcome(res); got["msg-0"] != "succeeded" || got["msg-2"] != "succeeded" {
			t.Errorf("outcomes %v, want msg-0 and msg-2 succeeded", got)
		}
		if n := len(f.as.TokenRequests()) - requests; n != 0 {
			t.Errorf("%d token requests with the lease unwritten, want 0", n)
		}
		proxy.stall.Store(nil)
		res = invoke(t, f.s.call, sqsEvent(t, grantCall(f.mcp, "lease", "toolu_oauth_lease")))
		if got := batchFailures(t, res); len(got) != 0 {
			t.Errorf("the redelivery failed: %v %v", got, outcome(res))
		}
	})

	t.Run("write-back", func(t *testing.T) {
		proxy.stalled.Store(0)
		f.putExpired(t, "writeback", f.as.IssueRefreshToken())
		// The lease carries refresh_lease; the write-back does not.
		stall := func(body []byte) bool { return !bytes.Contains(body, []byte("refresh_lease")) }
		proxy.stall.Store(&stall)
		res := run(t, "writeback", "writeback")
		if got := batchFailures(t, res); len(got) != 0 {
			t.Errorf("batch item failures %v, want none; outcomes %v", got, outcome(res))
		}
		want := map[string]string{"msg-0": "succeeded", "msg-1": "dead_lettered mcp_authentication_failed_error", "msg-2": "succeeded"}
		if got := outcome(res); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("outcomes %v, want %v", got, want)
		}
		dlq := f.s.drainDLQ(t, "call")
		if len(dlq) != 1 || !strings.Contains(strings.Join(res.Logs, "\n"), "could not be stored") {
			t.Errorf("%d dead-lettered; want 1, its reason (could not be stored) in the logs", len(dlq))
		}
		proxy.stall.Store(nil)
	})
}
