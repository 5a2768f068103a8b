package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/rietest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// TestOAuthConcurrentRefreshAcrossProcesses: one vault holds an mcp_oauth
// credential whose access token has expired (refresh token rotating,
// client_secret_basic) beside a static credential for another server. Two
// call processes, each under its own RIE, are invoked at once: each first
// gets an SQS batch of three task-token records (run concurrently inside
// the process), then two direct invocations. The authorization server
// holds every token answer 300 ms so the processes overlap.
//
// Every work item gets its tool_result; the refresh token reaches the
// token endpoint exactly once and is never presented again; the vault's
// current version holds the rotated refresh token and a valid access token
// and the static credential unchanged. The canary: none of the access
// tokens, refresh tokens, the client secret, its Basic form or the static
// token appears in either process's output, a result, a task report, the
// ledger or the DLQ (which stays empty).
func TestOAuthConcurrentRefreshAcrossProcesses(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{TokenDelay: 300 * time.Millisecond})
	h, counters := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	mcpServer := httptest.NewServer(mux)
	t.Cleanup(mcpServer.Close)
	mux.Handle("/mcp", oauthtest.RequireBearer(as, mcpServer.URL+"/.well-known/oauth-protected-resource/mcp", "", h))
	mcpURL := mcpServer.URL + "/mcp"

	staticToken := "e2e-static-" + rand.Text()
	static := mcptest.NewServer(t, mcptest.Options{BearerToken: staticToken})

	s := newStack(t, stackOptions{
		allow:   []string{as.AllowEntry(), allowOnly(t, mcpURL), allowOnly(t, static.URL)},
		timeout: time.Minute,
		env:     []string{"MCPFN_LOG_LEVEL=DEBUG"}, // the canary reads every line there is
	})
	original := "at-original-" + rand.Text()
	rt := as.IssueRefreshToken()
	staticCred := vault.Credential{Type: vault.TypeStaticBearer, ServerURL: static.URL, Token: staticToken}
	oauthCred := vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpURL, Token: original, ExpiresAt: time.Now().Add(-time.Minute).Truncate(time.Second),
		Refresh: &vault.Refresh{TokenEndpoint: as.TokenURL, ClientID: as.Options.ClientID, RefreshToken: rt,
			Auth: vault.EndpointAuth{Type: "client_secret_basic", ClientSecret: as.Options.ClientSecret}}}
	vaulttest.CreateSecret(t, s.secrets, s.secretsPrefix+"oauth", staticCred, oauthCred)

	procs := map[string]*rietest.Function{"a": s.call, "b": rietest.StartFunction(t, s.callConfig)}
	names := []string{"a", "b"}

	// Warm both runtimes with a call through the vault's static credential,
	// so the contended round is not spread over two cold starts.
	for _, p := range names {
		id := "toolu_warm_" + p
		res := invoke(t, procs[p], mustJSON(t, oauthCall(static.URL, id)))
		if res.ErrorType != "" {
			t.Fatalf("warm-up of process %s: %s: %s", p, res.ErrorType, res.ErrorMessage)
		}
		checkToolResult(t, res.Payload, id, false, "hi "+id)
	}
	if n := len(as.TokenRequests()); n != 0 {
		t.Fatalf("%d token requests after the static calls, want none", n)
	}

	// The contended round: both processes start together.
	type invocation struct {
		proc, name string
		direct     string   // the tool_use_id of a direct invocation
		records    []string // the tool_use_ids of an SQS batch's records
		event      []byte
	}
	var all []*invocation
	byProc := map[string][]*invocation{}
	for _, p := range names {
		batch := &invocation{proc: p, name: "sqs batch"}
		var bodies []any
		for i := range 3 {
			id := fmt.Sprintf("toolu_oauth_%s_sqs%d", p, i)
			req := oauthCall(mcpURL, id)
			req["task_token"] = "oauth-task-" + id
			bodies = append(bodies, req)
			batch.records = append(batch.records, id)
		}
		batch.event = sqsEvent(t, bodies...)
		byProc[p] = append(byProc[p], batch)
		for i := range 2 {
			id := fmt.Sprintf("toolu_oauth_%s_direct%d", p, i)
			byProc[p] = append(byProc[p], &invocation{proc: p, name: id, direct: id, event: mustJSON(t, oauthCall(mcpURL, id))})
		}
		all = append(all, byProc[p]...)
	}
	type outcome struct {
		inv *invocation
		res rietest.Result
		err error
	}
	start := make(chan struct{})
	done := make(chan outcome, len(all))
	for _, p := range names {
		go func() {
			<-start
			for _, inv := range byProc[p] {
				res, err := procs[p].Invoke(t.Context(), inv.event)
				done <- outcome{inv, res, err}
			}
		}()
	}
	close(start)
	var results []string
	for range all {
		o := <-done
		what := "process " + o.inv.proc + " " + o.inv.name
		switch {
		case o.err != nil:
			t.Errorf("%s: %v", what, o.err)
			continue
		case o.res.ErrorType != "":
			t.Errorf("%s: %s: %s", what, o.res.ErrorType, o.res.ErrorMessage)
			continue
		}
		results = append(results, string(o.res.Payload))
		if o.inv.direct != "" {
			checkToolResult(t, o.res.Payload, o.inv.direct, false, "hi "+o.inv.direct)
		} else if got := batchFailures(t, o.res); len(got) != 0 {
			t.Errorf("%s: batch item failures %v, want none: the tasks carry the outcomes", what, got)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	reports := s.tasks.Reports()
	var wantTokens, gotTokens []string
	for _, inv := range all {
		for _, id := range inv.records {
			wantTokens = append(wantTokens, "oauth-task-"+id)
		}
	}
	for _, rep := range reports {
		gotTokens = append(gotTokens, rep.TaskToken)
		if rep.Action() != "SendTaskSuccess" {
			t.Errorf("task %s: %s %s: %s", rep.TaskToken, rep.Action(), rep.Error, rep.Cause)
			continue
		}
		id := strings.TrimPrefix(rep.TaskToken, "oauth-task-")
		checkToolResult(t, rep.Output, id, false, "hi "+id)
	}
	slices.Sort(wantTokens)
	slices.Sort(gotTokens)
	if diff := cmp.Diff(wantTokens, gotTokens); diff != "" {
		t.Errorf("task reports (-want +got):\n%s", diff)
	}
	if n, want := counters.CallCount("echo"), 2*(3+2); n != want {
		t.Errorf("the OAuth server ran echo %d times, want %d (one per work item)", n, want)
	}

	// Exactly one refresh, with the stored refresh token, never repeated.
	reqs := as.TokenRequests()
	if len(reqs) != 1 || reqs[0].GrantType != "refresh_token" || reqs[0].RefreshToken != rt ||
		reqs[0].AuthMethod != "client_secret_basic" || reqs[0].Error != "" {
		t.Errorf("token requests %+v, want one successful refresh_token grant with the stored token (client_secret_basic)", redactRequests(reqs, rt))
	}
	if spent := as.SpentRefreshTokens(); len(spent) != 1 || spent[0] != rt {
		t.Errorf("%d refresh tokens spent (the stored one first: %v), want exactly the stored one", len(spent), len(spent) > 0 && spent[0] == rt)
	}
	if n := as.Reuses(); n != 0 {
		t.Errorf("a spent refresh token was presented %d times, want never", n)
	}
	refreshed, waited := 0, map[string]int{}
	for _, p := range names {
		for _, l := range procs[p].Logs() {
			var line struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal([]byte(l), &line) != nil {
				continue
			}
			switch line.Msg {
			case "oauth token refreshed":
				refreshed++
			case "oauth token refreshed by another instance":
				waited[p]++
			}
		}
	}
	if refreshed != 1 {
		t.Errorf("%d \"oauth token refreshed\" log lines across both processes, want 1", refreshed)
	}
	// Not asserted (it depends on scheduling): how much the processes overlapped.
	t.Logf("work items that waited for another's refresh: process a %d, process b %d", waited["a"], waited["b"])

	// The vault's current version: the rotation written back, the static
	// credential as it was.
	out, err := s.secrets.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(s.secretsPrefix + "oauth"), VersionStage: aws.String("AWSCURRENT")})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := vault.Parse([]byte(aws.ToString(out.SecretString)))
	if err != nil {
		t.Fatal(err)
	}
	if len(creds) != 2 {
		t.Fatalf("the vault holds %d credentials after the refresh, want 2", len(creds))
	}
	if diff := cmp.Diff(staticCred, creds[0]); diff != "" {
		t.Errorf("static credential after the refresh (-want +got):\n%s", diff)
	}
	got := creds[1]
	newAccess, newRefresh := got.Token, ""
	if got.Refresh != nil {
		newRefresh = got.Refresh.RefreshToken
	}
	switch {
	case got.Type != vault.TypeMCPOAuth || got.ServerURL != mcpURL:
		t.Errorf("stored credential %v, want the mcp_oauth one for %s", got, mcpURL)
	case newAccess == original || !as.Valid(newAccess):
		t.Errorf("stored access token: the original %v, valid at the server %v; want a new valid one", newAccess == original, as.Valid(newAccess))
	case newRefresh == "" || newRefresh == rt || slices.Contains(as.SpentRefreshTokens(), newRefresh):
		t.Errorf("stored refresh token: empty %v, the spent one %v; want the rotated one", newRefresh == "", newRefresh == rt)
	case got.Lease != nil:
		t.Errorf("stored credential still holds a lease until %v", got.Lease.ExpiresAt)
	case !got.ExpiresAt.After(time.Now().Add(vault.RefreshMargin)):
		t.Errorf("stored expires_at %v, want the new token's (an hour ahead)", got.ExpiresAt)
	}
	if got.Refresh != nil {
		want, kept := *oauthCred.Refresh, *got.Refresh
		want.RefreshToken = newRefresh
		secretKept := kept.Auth.ClientSecret == want.Auth.ClientSecret
		want.Auth.ClientSecret, kept.Auth.ClientSecret = "", "" // kept out of a diff
		if diff := cmp.Diff(want, kept); diff != "" || !secretKept {
			t.Errorf("stored refresh block: client secret kept %v; (-want +got):\n%s", secretKept, diff)
		}
	}

	// The canary.
	secrets := map[string]string{
		"the original access token": original,
		"the new access token":      newAccess,
		"the spent refresh token":   rt,
		"the rotated refresh token": newRefresh,
		"the client secret":         as.Options.ClientSecret,
		"the Basic credentials":     base64.StdEncoding.EncodeToString([]byte(as.Options.ClientID + ":" + as.Options.ClientSecret)),
		"the static token":          staticToken,
	}
	places := map[string]string{}
	for _, p := range names {
		places["the output of process "+p] = strings.Join(procs[p].Logs(), "\n")
	}
	places["the results"] = strings.Join(results, "\n")
	places["the task reports"] = string(mustJSON(t, reports))
	dead := s.drainDLQ(t, "call")
	if len(dead) != 0 {
		t.Errorf("the call DLQ holds %d messages, want none", len(dead))
	}
	places["the DLQ"] = strings.Join(dead, "\n")
	db := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(t.Context()))
	items, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(s.callsTable)})
	if err != nil {
		t.Fatal(err)
	}
	places["the ledger"] = string(mustJSON(t, items.Items))
	for where, text := range places {
		for what, secret := range secrets {
			if secret != "" && strings.Contains(text, secret) {
				t.Errorf("%s contains %s", where, what)
			}
		}
	}
}

// oauthCall is a call request for echo at serverURL with the vault "oauth".
func oauthCall(serverURL, toolUseID string) map[string]any {
	return map[string]any{"server_url": serverURL, "tool_name": "echo", "arguments": map[string]any{"text": "hi " + toolUseID},
		"vault_ids": []string{"oauth"}, "tool_use_id": toolUseID}
}

// redactRequests returns reqs for a failure message, each refresh token
// shown only as whether it is the stored one.
func redactRequests(reqs []oauthtest.TokenRequest, stored string) []oauthtest.TokenRequest {
	out := slices.Clone(reqs)
	for i := range out {
		if out[i].RefreshToken == stored {
			out[i].RefreshToken = "<stored>"
		} else if out[i].RefreshToken != "" {
			out[i].RefreshToken = "<other>"
		}
	}
	return out
}
