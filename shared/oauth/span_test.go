package oauth_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/oauth"
	"github.com/mcpfn/mcpfn/shared/oauth/oauthtest"
)

// TestSpans: under a recording span, discovery and a refresh are one
// CLIENT child per request, named by the endpoint, with the origin, the
// method and the status, and no token, path or query; a refused refresh
// is marked an error. Without a recording span nothing is traced.
func TestSpans(t *testing.T) {
	as := oauthtest.NewServer(t, oauthtest.Options{})
	res := oauthtest.NewResource(t, as, oauthtest.ResourceOptions{})
	c := client(t, as.AllowEntry(), res.AllowEntry())
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, item := tp.Tracer("test").Start(t.Context(), "item")

	ep := oauth.Endpoint{TokenURL: as.TokenURL, ClientID: as.Options.ClientID, Auth: oauth.Auth{Method: oauth.AuthNone}}
	if _, err := c.Refresh(t.Context(), ep, as.IssueRefreshToken()); err != nil {
		t.Fatal(err) // untraced
	}
	if _, err := c.Discover(ctx, res.URL); err != nil {
		t.Fatal(err)
	}
	rt := as.IssueRefreshToken()
	tok, err := c.Refresh(ctx, ep, rt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refresh(ctx, ep, rt); err == nil {
		t.Fatal("a reused refresh token was accepted")
	}
	item.End()

	type got struct {
		Name, Host, Method string
		Port, Status       int64
		Error              string
	}
	var gots []got
	tu, _ := url.Parse(as.TokenURL)
	for _, s := range rec.Ended() {
		if s.Name() == "item" {
			continue
		}
		if s.Parent().SpanID() != item.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s: parent %v kind %v, want a CLIENT child of the item", s.Name(), s.Parent().SpanID(), s.SpanKind())
		}
		g := got{Name: s.Name()}
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "server.address":
				g.Host = kv.Value.AsString()
			case "server.port":
				g.Port = kv.Value.AsInt64()
			case "http.request.method":
				g.Method = kv.Value.AsString()
			case "http.response.status_code":
				g.Status = kv.Value.AsInt64()
			case "error.type":
				g.Error = kv.Value.AsString()
			}
			for _, canary := range []string{rt, tok.AccessToken, tok.RefreshToken, "/mcp", "/token", "well-known"} {
				if strings.Contains(kv.Value.String(), canary) {
					t.Errorf("%s: %s = %q holds %q", s.Name(), kv.Key, kv.Value.String(), canary)
				}
			}
		}
		gots = append(gots, g)
	}
	port, _ := strconv.ParseInt(tu.Port(), 10, 64)
	rp, _ := url.Parse(res.URL)
	rport, _ := strconv.ParseInt(rp.Port(), 10, 64)
	want := []got{
		{Name: "OAuth MCP server", Host: rp.Hostname(), Port: rport, Method: "POST", Status: 401, Error: "401"},
		{Name: "OAuth protected-resource metadata", Host: rp.Hostname(), Port: rport, Method: "GET", Status: 200},
		{Name: "OAuth authorization-server metadata", Host: tu.Hostname(), Port: port, Method: "GET", Status: 200},
		{Name: "OAuth token endpoint", Host: tu.Hostname(), Port: port, Method: "POST", Status: 200},
		{Name: "OAuth token endpoint", Host: tu.Hostname(), Port: port, Method: "POST", Status: 400, Error: "400"},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}
