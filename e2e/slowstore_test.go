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
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/awstest"
)

// stallingProxy forwards to moto, except that a request whose body
// contains stall (any request when stall is "*") is held until its client
// gives up: a DynamoDB that stops answering.
type stallingProxy struct {
	*httptest.Server
	stall   atomic.Value // string; "" stalls nothing
	stalled atomic.Int32
}

func newStallingProxy(t *testing.T, target string) *stallingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{}
	p.stall.Store("")
	forward := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if s := p.stall.Load().(string); s == "*" || s != "" && bytes.Contains(body, []byte(s)) {
			p.stalled.Add(1)
			<-r.Context().Done()
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// TestSlowStore: a catalog write that never answers ends its record after
// the reserve, and the invocation answers before its deadline with the
// finished records acknowledged; redelivered, the record succeeds. Nothing
// is dead-lettered for the slowness. Under an outage every record comes
// back, again before the deadline.
func TestSlowStore(t *testing.T) {
	server := startExampleServer(t, true)
	proxy := newStallingProxy(t, awstest.SharedMoto(t).Endpoint())
	const timeout = 30 * time.Second
	s := newStack(t, stackOptions{
		allow:   []string{allowOnly(t, server)},
		timeout: timeout,
		env: []string{
			"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL,
			"MCPFN_OPERATION_TIMEOUT=5s",
			"MCPFN_RESERVE=5s",
		},
	})
	req := func(id string) map[string]string { return map[string]string{"catalog_id": id, "server_url": server} }

	proxy.stall.Store("slow-store-1")
	start := time.Now()
	res := invoke(t, s.discover, sqsEvent(t, req("slow-store-0"), req("slow-store-1"), req("slow-store-2")))
	if took := time.Since(start); took >= timeout {
		t.Errorf("the invocation answered after %s, past its %s deadline", took, timeout)
	}
	if got := batchFailures(t, res); !slices.Equal(got, []string{"msg-1"}) {
		t.Errorf("batch item failures %v, want [msg-1]; logs:\n%s", got, strings.Join(res.Logs, "\n"))
	}
	if proxy.stalled.Load() == 0 {
		t.Fatal("the proxy stalled nothing: the test did not test the slow store")
	}
	for _, sum := range summaries(res.Logs) {
		want := "succeeded"
		if sum.WorkItem == "msg-1" {
			want = "requeued"
		}
		if sum.Outcome != want {
			t.Errorf("%s: outcome %s (%s), want %s", sum.WorkItem, sum.Outcome, sum.ErrorType, want)
		}
	}

	proxy.stall.Store("")
	res = invoke(t, s.discover, sqsEvent(t, req("slow-store-1")))
	if got := batchFailures(t, res); len(got) != 0 {
		t.Errorf("the redelivery failed: %v", got)
	}
	for i := range 3 {
		if _, err := s.store.Get(t.Context(), fmt.Sprintf("slow-store-%d", i)); err != nil {
			t.Errorf("catalog slow-store-%d: %v", i, err)
		}
	}

	proxy.stall.Store("*")
	start = time.Now()
	res = invoke(t, s.discover, sqsEvent(t, req("outage-0"), req("outage-1")))
	if took := time.Since(start); took >= timeout {
		t.Errorf("under an outage the invocation answered after %s, past its %s deadline", took, timeout)
	}
	if got := batchFailures(t, res); !slices.Equal(got, []string{"msg-0", "msg-1"}) {
		t.Errorf("under an outage, batch item failures %v, want both records", got)
	}
	if dl := s.drainDLQ(t, "discover"); len(dl) != 0 {
		t.Errorf("dead-lettered for the slowness: %v", dl)
	}
}
