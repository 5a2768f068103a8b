package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/ledger"
)

// fault is what the proxy does to one request.
type fault int

const (
	pass       fault = iota
	dropAnswer       // forwarded and applied, then the connection closed unanswered
	stall            // never forwarded nor answered, until the client gives up
)

// proxy forwards DynamoDB requests to moto over loopback, applying the
// fault armed for a request's operation to its next request, and always to
// every request once set.
type proxy struct {
	*httptest.Server
	moto   string // the endpoint requests go on to
	mu     sync.Mutex
	n      map[string]int
	next   map[string]fault
	always fault
	stop   chan struct{}
}

func newProxy(t *testing.T) *proxy {
	p := &proxy{moto: awstest.SharedMoto(t).Endpoint(), n: map[string]int{}, next: map[string]fault{}, stop: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		close(p.stop)
		p.Close()
	})
	return p
}

// arm applies f to the next request of op.
func (p *proxy) arm(op string, f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next[op] = f
}

// setAlways applies f to every request from now on.
func (p *proxy) setAlways(f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.always = f
}

// count is how many requests of op arrived.
func (p *proxy) count(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[op]
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	p.mu.Lock()
	p.n[op]++
	f := p.always
	if g, ok := p.next[op]; ok {
		f = g
		delete(p.next, op)
	}
	p.mu.Unlock()

	if f == stall {
		select {
		case <-r.Context().Done():
		case <-p.stop:
		}
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.moto+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body) // all of it: the write is surely applied
	resp.Body.Close()
	if f == dropAnswer || err != nil {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// proxied returns a client of a fresh table through a proxy, with the
// SDK's default retryer, a direct client, and the table.
func proxied(t *testing.T) (*proxy, *dynamodb.Client, *dynamodb.Client, string) {
	direct, table := newTable(t)
	p := newProxy(t)
	client := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(t.Context()), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(p.URL)
	})
	return p, client, direct, table
}

// TestLostAnswerIsOurs: a write is applied, its answer lost, and the SDK
// retries it; the retry's refused condition meets the record the first
// attempt wrote, which the ledger recognises as its own.
func TestLostAnswerIsOurs(t *testing.T) {
	t.Run("begin", func(t *testing.T) {
		t.Parallel()
		p, client, direct, table := proxied(t)
		d := ledger.NewDynamo(client, table, lease)
		p.arm("PutItem", dropAnswer)
		got, err := d.Begin(t.Context(), "k")
		if err != nil {
			t.Fatalf("Begin after a lost answer: %v, want the lease", err)
		}
		// What the first write replaced went with its answer: TookOver is
		// the cautious reading.
		if diff := cmp.Diff(ledger.Entry{TookOver: true}, got); diff != "" {
			t.Errorf("Begin after a lost answer (-want +got):\n%s", diff)
		}
		if n := p.count("PutItem"); n != 2 {
			t.Fatalf("%d PutItems reached the proxy, want the dropped one and the SDK's retry", n)
		}
		_, err = ledger.NewDynamo(direct, table, lease).Begin(t.Context(), "k")
		wantErr(t, "Begin by another delivery", err, ledger.ErrInProgress)
		if err := d.Complete(t.Context(), "k", outcome); err != nil {
			t.Fatalf("Complete by the lease holder: %v", err)
		}
	})
	t.Run("complete", func(t *testing.T) {
		t.Parallel()
		p, client, direct, table := proxied(t)
		d := ledger.NewDynamo(client, table, lease)
		mustBegin(t, d, "k", ledger.Entry{})
		p.arm("PutItem", dropAnswer)
		if err := d.Complete(t.Context(), "k", outcome); err != nil {
			t.Fatalf("Complete after a lost answer: %v, want success", err)
		}
		if n := p.count("PutItem"); n != 3 {
			t.Fatalf("%d PutItems reached the proxy, want Begin's, the dropped Complete and the SDK's retry", n)
		}
		mustBegin(t, ledger.NewDynamo(direct, table, lease), "k", ledger.Entry{Done: true, Outcome: outcome})
		wantErr(t, "second Complete", d.Complete(t.Context(), "k", outcome), ledger.ErrNotOwner)
	})
	t.Run("release", func(t *testing.T) {
		t.Parallel()
		p, client, direct, table := proxied(t)
		d := ledger.NewDynamo(client, table, lease)
		mustBegin(t, d, "k", ledger.Entry{})
		p.arm("DeleteItem", dropAnswer)
		if err := d.Release(t.Context(), "k"); err != nil {
			t.Fatalf("Release after a lost answer: %v, want success", err)
		}
		if n := p.count("DeleteItem"); n != 2 {
			t.Fatalf("%d DeleteItems reached the proxy, want the dropped one and the SDK's retry", n)
		}
		mustBegin(t, ledger.NewDynamo(direct, table, lease), "k", ledger.Entry{})
	})
}

// TestStalledTableHonoursTheDeadline: with every request stalled, each
// operation bounded by a short context fails soon after its deadline with
// the context's error, not a verdict, and the records are as they were.
func TestStalledTableHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	const deadline, margin = 1500 * time.Millisecond, 3 * time.Second
	p, client, direct, table := proxied(t)
	d := ledger.NewDynamo(client, table, lease)
	mustBegin(t, d, "held", ledger.Entry{})
	p.setAlways(stall)
	ops := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"Begin", func(ctx context.Context) error { _, err := d.Begin(ctx, "new"); return err }},
		{"Complete", func(ctx context.Context) error { return d.Complete(ctx, "held", outcome) }},
		{"Release", func(ctx context.Context) error { return d.Release(ctx, "held") }},
	}
	for _, op := range ops {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		err := op.do(ctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ledger.ErrInProgress) || errors.Is(err, ledger.ErrNotOwner) {
			t.Errorf("%s on a stalled table: %v, want the context's deadline", op.name, err)
		}
		if took > deadline+margin {
			t.Errorf("%s on a stalled table returned after %s, over the %s deadline + %s", op.name, took, deadline, margin)
		}
	}
	p.setAlways(pass)
	// The lease survived the failed writes: its holder still completes.
	_, err := ledger.NewDynamo(direct, table, lease).Begin(t.Context(), "held")
	wantErr(t, "Begin by another delivery", err, ledger.ErrInProgress)
	if err := d.Complete(t.Context(), "held", outcome); err != nil {
		t.Fatalf("Complete after the stall: %v", err)
	}
	mustBegin(t, ledger.NewDynamo(direct, table, lease), "new", ledger.Entry{})
}
