package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// receiver is an in-test OTLP/HTTP trace receiver on loopback.
type receiver struct {
	URL   string
	mu    sync.Mutex
	spans []*tracepb.Span
}

func startReceiver(t *testing.T) *receiver { return startCheckingReceiver(t, nil) }

// startCheckingReceiver is startReceiver whose every export request is
// also given to check, which reports a refused one with t.Errorf.
func startCheckingReceiver(t *testing.T, check func(req *http.Request, body []byte)) *receiver {
	t.Helper()
	r := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var in collectortrace.ExportTraceServiceRequest
		if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &in) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		if check != nil {
			check(req, body)
		}
		r.mu.Lock()
		for _, rs := range in.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// take returns and forgets the spans received so far.
func (r *receiver) take() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spans
	r.spans = nil
	return s
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

const (
	sqsRoot = "1-6751a2b4-fedcba9876543210fedcba98"
	sqsHex  = "6751a2b4fedcba9876543210fedcba98"
)

// TestTraceEndToEnd: with MCPFN_TRACES=otlp, the real bootstraps under the
// RIE export one span per work item (an SQS record's in the trace of its
// AWSTraceHeader; the RIE passes no X-Amzn-Trace-Id to the runtime, so the
// direct path's header is runner's TestWorkItemSpan), with one MCP CLIENT span
// per request and one per catalog and ledger operation (each over its
// DynamoDB calls) as its children; the MCP server sees the exported spans'
// traceparent in the header and in params._meta of every request; a
// primed call is one MCP span; the canary is in no exported span.
func TestTraceEndToEnd(t *testing.T) {
	const canaryQuery, canaryArg = "k=trace-canary-q", "trace-canary-arg"
	rcv := startReceiver(t)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, BearerToken: bearer})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, srv.URL)}, env: []string{
		"MCPFN_TRACES=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL,
	}})
	serverURL := srv.URL + "?" + canaryQuery
	s.putVault(t, "v", serverURL, bearer)
	seen := 0 // the server's requests checked so far

	// check checks the spans exported since the last check: one work item
	// span of fn (in trace wantTrace unless empty), wantMCP its MCP
	// children, wantOwn its store and ledger children (ownSpans), and the
	// server's requests since the last check.
	check := func(t *testing.T, fn string, wantTrace string, wantMCP, wantOwn []string) {
		t.Helper()
		spans := rcv.take()
		var items []*tracepb.Span
		ids := map[string]*tracepb.Span{}
		for _, sp := range spans {
			ids[hex.EncodeToString(sp.SpanId)] = sp
			if sp.Name == fn {
				items = append(items, sp)
			}
		}
		if len(items) != 1 {
			t.Fatalf("%s: %d work item spans of %d, want 1", fn, len(items), len(spans))
		}
		item := items[0]
		if wantTrace == "" {
			wantTrace = hex.EncodeToString(item.TraceId)
		}
		if got := hex.EncodeToString(item.TraceId); got != wantTrace {
			t.Errorf("%s: trace id %s, want the caller's %s", fn, got, wantTrace)
		}
		if spanAttr(item, "mcpfn.outcome") != "succeeded" {
			t.Errorf("%s: outcome %q", fn, spanAttr(item, "mcpfn.outcome"))
		}
		var mcp []string
		for _, sp := range spans {
			if sp == item {
				continue
			}
			if hex.EncodeToString(sp.ParentSpanId) == hex.EncodeToString(item.SpanId) && sp.Kind == tracepb.Span_SPAN_KIND_CLIENT && spanAttr(sp, "mcp.method.name") != "" {
				mcp = append(mcp, sp.Name)
			}
		}
		if strings.Join(mcp, ",") != strings.Join(wantMCP, ",") {
			t.Errorf("%s: MCP spans %v, want %v", fn, mcp, wantMCP)
		}
		if own := ownSpans(t, spans, item); !slices.Equal(own, wantOwn) {
			t.Errorf("%s: own spans %v, want %v", fn, own, wantOwn)
		}
		traces := srv.Traces()
		if len(traces) == seen {
			t.Errorf("%s: the server saw no request", fn)
		}
		for _, tr := range traces[seen:] {
			if tr.Method == "GET" || tr.Method == "DELETE" {
				continue
			}
			parts := strings.Split(tr.Header, "-")
			if len(parts) != 4 || tr.Meta != tr.Header || parts[1] != wantTrace || ids[parts[2]] == nil {
				t.Errorf("%s: %s carried traceparent %q, _meta %q: want an exported span of trace %s in both", fn, tr.Method, tr.Header, tr.Meta, wantTrace)
			}
		}
		for _, sp := range spans {
			b, _ := json.Marshal(sp)
			for _, c := range []string{bearer, "trace-canary", "/mcp"} {
				if bytes.Contains(b, []byte(c)) {
					t.Errorf("exported span %s holds %q", sp.Name, c)
				}
			}
		}
		seen = len(traces)
	}

	discover := mustJSON(t, map[string]any{"catalog_id": "traced", "server_url": serverURL, "vault_ids": []string{"v"}})
	if res := invoke(t, s.discover, discover); !bytes.Contains(res.Payload, []byte(`"tool_count"`)) {
		t.Fatalf("discover answered %s %s %s", res.ErrorType, res.ErrorMessage, res.Payload)
	}
	check(t, "discover", "", []string{"server/discover", "tools/list"}, []string{"catalog.put"})

	before := len(srv.Traces())
	call := mustJSON(t, map[string]any{"catalog_id": "traced", "server_url": serverURL, "vault_ids": []string{"v"},
		"tool_name": "echo", "arguments": map[string]any{"text": canaryArg}, "tool_use_id": "toolu_trace"})
	if res := invoke(t, s.call, call); !bytes.Contains(res.Payload, []byte(canaryArg)) {
		t.Fatalf("call answered %s %s %s", res.ErrorType, res.ErrorMessage, res.Payload)
	}
	if n := len(srv.Traces()) - before; n != 1 {
		t.Errorf("the primed call sent %d requests, want 1", n)
	}
	check(t, "call", "", []string{"tools/call echo"}, []string{"catalog.lookup", "ledger.begin", "ledger.complete"})

	// An SQS record continues the trace of its AWSTraceHeader.
	ev := map[string]any{"Records": []map[string]any{{
		"messageId": "msg-0", "receiptHandle": "r", "body": string(discover), "eventSource": "aws:sqs",
		"eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:e2e", "awsRegion": "us-east-1",
		"attributes": map[string]string{"AWSTraceHeader": "Root=" + sqsRoot + ";Parent=63995c3f42cd8ad8;Sampled=1"},
	}}}
	if res := invoke(t, s.discover, mustJSON(t, ev)); !bytes.Contains(res.Payload, []byte(`"batchItemFailures":[]`)) {
		t.Fatalf("batch answered %s %s %s", res.ErrorType, res.ErrorMessage, res.Payload)
	}
	check(t, "discover", sqsHex, []string{"server/discover", "tools/list"}, []string{"catalog.put"})
}

// TestTraceExportDown: a receiver that answers 500, or never answers,
// fails no work item and delays none past its deadline; the summary line
// says trace_export "failed".
func TestTraceExportDown(t *testing.T) {
	hang := make(chan struct{})
	receivers := map[string]*httptest.Server{
		"500": httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down", http.StatusInternalServerError)
		})),
		"never answers": httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang })),
	}
	srv := mcptest.NewServer(t, mcptest.Options{})
	for name, rcv := range receivers {
		t.Run(name, func(t *testing.T) {
			defer rcv.Close()
			if name == "never answers" {
				defer close(hang) // before Close, which waits for the handler
			}
			const timeout = 8 * time.Second
			s := newStack(t, stackOptions{allow: []string{allowOnly(t, srv.URL)}, timeout: timeout, env: []string{
				"MCPFN_TRACES=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "MCPFN_RESERVE=3s",
			}})
			start := time.Now()
			res := invoke(t, s.call, mustJSON(t, map[string]any{"server_url": srv.URL, "tool_name": "echo",
				"arguments": map[string]any{"text": "hi"}, "tool_use_id": "toolu_down"}))
			if res.ErrorType != "" || !bytes.Contains(res.Payload, []byte(`"tool_result"`)) {
				t.Fatalf("call = %s %s %s, want its result", res.ErrorType, res.ErrorMessage, res.Payload)
			}
			if d := time.Since(start); d > timeout {
				t.Errorf("answered after %s, past the %s deadline", d, timeout)
			}
			found := false
			for _, l := range res.Logs {
				var line struct {
					Msg         string `json:"msg"`
					Outcome     string `json:"outcome"`
					TraceExport string `json:"trace_export"`
				}
				if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "work item" {
					found = true
					if line.Outcome != "succeeded" || line.TraceExport != "failed" {
						t.Errorf("summary %s: want succeeded with trace_export failed", l)
					}
				}
			}
			if !found {
				t.Errorf("no summary line in %v", res.Logs)
			}
		})
	}
}

// TestTraceOAuthRefresh: a call whose vault credential has expired is one
// trace: under the work item span, the vault read (Secrets Manager
// GetSecretValue), one OAuth token endpoint CLIENT span with the
// endpoint's origin only, the write-back (PutSecretValue) and the MCP
// request. No exported
// span holds a token, the client secret, its Basic form, a URL path or
// the query.
func TestTraceOAuthRefresh(t *testing.T) {
	rcv := startReceiver(t)
	as := oauthtest.NewServer(t, oauthtest.Options{})
	h, _ := mcptest.NewHandler(mcptest.Options{})
	mux := http.NewServeMux()
	mcpServer := httptest.NewServer(mux)
	t.Cleanup(mcpServer.Close)
	mux.Handle("/mcp", oauthtest.RequireBearer(as, mcpServer.URL+"/.well-known/oauth-protected-resource/mcp", "", h))
	mcpURL := mcpServer.URL + "/mcp?k=trace-canary-q"
	s := newStack(t, stackOptions{allow: []string{as.AllowEntry(), allowOnly(t, mcpURL)}, env: []string{
		"MCPFN_TRACES=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL,
	}})
	original, rt := "at-original-"+rand.Text(), as.IssueRefreshToken()
	vaulttest.CreateSecret(t, s.secrets, s.secretsPrefix+"oauth", vault.Credential{Type: vault.TypeMCPOAuth, ServerURL: mcpURL, Token: original,
		ExpiresAt: time.Now().Add(-time.Minute).Truncate(time.Second),
		Refresh: &vault.Refresh{TokenEndpoint: as.TokenURL, ClientID: as.Options.ClientID, RefreshToken: rt,
			Auth: vault.EndpointAuth{Type: "client_secret_basic", ClientSecret: as.Options.ClientSecret}}})

	res := invoke(t, s.call, mustJSON(t, oauthCall(mcpURL, "toolu_trace_oauth")))
	checkToolResult(t, res.Payload, "toolu_trace_oauth", false, "hi toolu_trace_oauth")
	reqs := as.TokenRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d token requests, want 1", len(reqs))
	}

	spans := rcv.take()
	byID := map[string]*tracepb.Span{}
	var item *tracepb.Span
	for _, sp := range spans {
		byID[hex.EncodeToString(sp.SpanId)] = sp
		if sp.Name == "call" {
			item = sp
		}
	}
	if item == nil {
		t.Fatalf("no work item span among %d", len(spans))
	}
	// under reports whether sp descends from item.
	under := func(sp *tracepb.Span) bool {
		for p := byID[hex.EncodeToString(sp.ParentSpanId)]; p != nil; p = byID[hex.EncodeToString(p.ParentSpanId)] {
			if p == item {
				return true
			}
		}
		return false
	}
	count := map[string]int{}
	tokenURL, _ := url.Parse(as.TokenURL)
	for _, sp := range spans {
		if sp == item {
			continue
		}
		if !under(sp) || !bytes.Equal(sp.TraceId, item.TraceId) {
			t.Errorf("span %s is not under the work item", sp.Name)
		}
		count[sp.Name]++
		if sp.Name == "OAuth token endpoint" {
			port := ""
			for _, kv := range sp.Attributes {
				if kv.Key == "server.port" {
					port = strconv.FormatInt(kv.Value.GetIntValue(), 10)
				}
			}
			if sp.Kind != tracepb.Span_SPAN_KIND_CLIENT || spanAttr(sp, "server.address") != tokenURL.Hostname() || port != tokenURL.Port() {
				t.Errorf("token span: kind %v, server %s:%s; want CLIENT, %s", sp.Kind, spanAttr(sp, "server.address"), port, tokenURL.Host)
			}
		}
	}
	for _, name := range []string{"OAuth token endpoint", "tools/call echo"} {
		if count[name] != 1 {
			t.Errorf("%d %q spans under the work item, want 1", count[name], name)
		}
	}
	// The vault is read again to take the refresh lease and to write back.
	for _, name := range []string{"Secrets Manager.GetSecretValue", "Secrets Manager.PutSecretValue"} {
		if count[name] == 0 {
			t.Errorf("no %q span under the work item", name)
		}
	}

	canaries := []string{rt, original, as.Options.ClientSecret, oauth.BasicCredentials(as.Options.ClientID, as.Options.ClientSecret),
		"trace-canary", "/mcp", "/token", "well-known", s.secretsPrefix}
	for _, r := range reqs {
		canaries = append(canaries, r.RefreshToken)
	}
	for _, sp := range spans {
		b, _ := json.Marshal(sp)
		for _, c := range canaries {
			if c != "" && bytes.Contains(b, []byte(c)) {
				t.Errorf("exported span %s holds %q", sp.Name, c)
			}
		}
	}
}
