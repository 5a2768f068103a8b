package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/shared/awsconf"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
)

// fault is what the proxy does to one request.
type fault int

const (
	pass        fault = iota
	throttle          // 400 ProvisionedThroughputExceededException, not forwarded
	throttling        // 400 ThrottlingException, not forwarded
	serverError       // 500 InternalServerError, not forwarded
	dropBefore        // connection closed, not forwarded
	dropAfter         // forwarded and applied, then the connection closed unanswered
	stall             // not forwarded, never answered, until the client gives up
)

func (f fault) String() string {
	return [...]string{"pass", "throttle", "throttling", "serverError", "dropBefore", "dropAfter", "stall"}[f]
}

// faultProxy forwards DynamoDB requests to moto and applies plan to each:
// n counts all requests, k requests of the same operation (both from 1).
type faultProxy struct {
	*httptest.Server
	moto  string // the endpoint requests go on to
	mu    sync.Mutex
	n     int
	k     map[string]int
	plan  func(n, k int, op string) fault
	fired []string
	quit  chan struct{} // ends stalls
	// forwards counts requests on their way to moto. Each is counted under
	// mu as it is decided, and runs detached from its client, so that once
	// cut has returned nothing the store sent can still land.
	forwards sync.WaitGroup
}

func newFaultProxy(t *testing.T) *faultProxy {
	p := &faultProxy{moto: awstest.SharedMoto(t).Endpoint(), k: map[string]int{}, quit: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		close(p.quit)
		p.Close()
	})
	return p
}

func (p *faultProxy) arm(plan func(n, k int, op string) fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.k, p.plan, p.fired = 0, map[string]int{}, plan, nil
}

// cut ends every later request unforwarded, and returns once the requests
// already on their way to moto have been applied. Moto applies an
// UpdateItem attribute by attribute, unisolated from a concurrent GetItem,
// so a flip still landing while a test reads can be read torn: a head
// naming the new version with the old tool count (run ha, stop 30).
// DynamoDB does not tear an item, and a test must not read through that.
func (p *faultProxy) cut() {
	p.mu.Lock()
	p.plan = func(int, int, string) fault { return dropBefore }
	p.mu.Unlock()
	p.forwards.Wait()
}

func (p *faultProxy) firedFaults() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.fired...)
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	p.mu.Lock()
	p.n++
	p.k[op]++
	f := pass
	if p.plan != nil {
		f = p.plan(p.n, p.k[op], op)
	}
	if f != pass {
		p.fired = append(p.fired, fmt.Sprintf("%s %s#%d", f, op, p.k[op]))
	}
	if f == pass || f == dropAfter {
		p.forwards.Add(1)
		defer p.forwards.Done()
	}
	p.mu.Unlock()

	switch f {
	case throttle:
		apiError(w, 400, "ProvisionedThroughputExceededException")
	case throttling:
		apiError(w, 400, "ThrottlingException")
	case serverError:
		apiError(w, 500, "InternalServerError")
	case dropBefore:
		hangUp(w)
	case stall:
		select {
		case <-r.Context().Done():
		case <-p.quit:
		}
	case dropAfter:
		if resp, err := p.forward(r); err == nil {
			resp.Body.Close()
		}
		hangUp(w)
	default:
		resp, err := p.forward(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}
}

func (p *faultProxy) forward(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.moto+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	// Read the whole answer so a dropAfter request is surely applied.
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, err
}

func apiError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected"}`, code)
}

func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// fastBackoff is the backoff of the tests' retryers.
var fastBackoff = awsconf.Backoff{Min: time.Millisecond, Max: 20 * time.Millisecond}

// newProxied returns a store whose requests pass through a fault proxy,
// its client's retryer the one awsconf configures, backing off b.
func newProxied(t *testing.T, b awsconf.Backoff) (*catalog.Dynamo, *faultProxy, *dynamodb.Client, string) {
	ctx := context.Background()
	client, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
	p := newFaultProxy(t)
	proxied := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(ctx), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(p.URL)
		o.Retryer = awsconf.NewRetryer(awsconf.MaxAttempts, b)
	})
	s := catalog.NewDynamo(catalogtest.Strict(t, proxied), table, catalog.WithBackoff(b.Min, b.Max))
	return s, p, client, table
}

// TestStalledStoreHonoursTheDeadline: requests stall (from the first, or
// from the flip on); every call bounded by a short context fails with
// ErrUnavailable soon after its deadline, through the SDK's default
// retryer, and the catalog keeps its last good version.
func TestStalledStoreHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	const deadline, margin = 1500 * time.Millisecond, 3 * time.Second
	for _, tc := range []struct {
		name string
		from func(n, k int, op string) bool
	}{
		{"every request", func(int, int, string) bool { return true }},
		{"from the flip", func(_, _ int, op string) bool { return op == "UpdateItem" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, table := catalogtest.NewTable(t, awstest.SharedMoto(t))
			p := newFaultProxy(t)
			proxied := dynamodb.NewFromConfig(awstest.SharedMoto(t).Config(ctx), func(o *dynamodb.Options) {
				o.BaseEndpoint = aws.String(p.URL) // the SDK's default retryer
			})
			s := catalog.NewDynamo(catalogtest.Strict(t, proxied), table)
			a, b := catalogtest.Listing(40, "a"), catalogtest.Listing(30, "b")
			ra := catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
			stalled := false
			p.arm(func(n, k int, op string) fault {
				if stalled = stalled || tc.from(n, k, op); stalled {
					return stall
				}
				return pass
			})
			calls := []struct {
				name string
				do   func(ctx context.Context) error
			}{
				{"Put", func(ctx context.Context) error {
					_, err := s.Put(ctx, "id", catalogtest.Discover(b, time.Minute))
					return err
				}},
				{"RecordFailure", func(ctx context.Context) error {
					return s.RecordFailure(ctx, "id", catalog.Failure{ErrorType: "mcp_protocol_error", At: catalogtest.T0.Add(time.Hour)})
				}},
				{"Lookup", func(ctx context.Context) error { _, err := s.Lookup(ctx, "id", "tool-0"); return err }},
				{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, "id"); return err }},
			}
			for _, c := range calls {
				ctx, cancel := context.WithTimeout(ctx, deadline)
				start := time.Now()
				err := c.do(ctx)
				took := time.Since(start)
				cancel()
				if !errors.Is(err, catalog.ErrUnavailable) {
					t.Errorf("%s on a stalled store: %v, want ErrUnavailable", c.name, err)
				}
				if took > deadline+margin {
					t.Errorf("%s on a stalled store returned after %s, over the %s deadline + %s", c.name, took, deadline, margin)
				}
			}
			if len(p.firedFaults()) == 0 {
				t.Fatal("no request stalled")
			}
			p.arm(nil)
			p.forwards.Wait() // a write whose client gave up may still be landing (see cut)
			got := catalogtest.MustGet(t, s, "id")
			catalogtest.AssertContent(t, got, a)
			if got.Version != ra.Version || got.LastFailure != nil {
				t.Errorf("after the stall: version %s, failure %v; want %s and none", got.Version, got.LastFailure, ra.Version)
			}
		})
	}
}

// TestBackoffPastTheDeadlineGivesUp: a retry whose backoff would end after
// the context's deadline is not waited for.
func TestBackoffPastTheDeadlineGivesUp(t *testing.T) {
	t.Parallel()
	s, p, _, _ := newProxied(t, awsconf.Backoff{Min: time.Minute, Max: time.Minute})
	p.arm(func(int, int, string) fault { return throttle })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := s.Put(ctx, "id", catalogtest.Discover(catalogtest.Listing(1, "a"), 0))
	if !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("Put on a throttled store: %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Put returned after %s: it waited for a backoff past its 20 s deadline", took)
	}
}

func TestSingleFaultsAreRetried(t *testing.T) {
	t.Parallel()
	ops := []struct {
		op string
		k  int
	}{
		{"GetItem", 1},        // reading the head
		{"BatchWriteItem", 2}, // writing the new version's tools
		{"UpdateItem", 1},     // the flip
		{"GetItem", 2},        // reading the old manifest
		{"Query", 1},          // reading the 20 removed tools' names
		{"BatchWriteItem", 3}, // deleting the old tools
	}
	for _, f := range []fault{throttle, throttling, serverError, dropBefore, dropAfter} {
		for _, o := range ops {
			t.Run(fmt.Sprintf("%s %s#%d", f, o.op, o.k), func(t *testing.T) {
				t.Parallel()
				s, p, _, _ := newProxied(t, fastBackoff)
				a, b := catalogtest.Listing(50, "a"), catalogtest.Listing(30, "b")
				catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
				p.arm(func(_, k int, op string) fault {
					if op == o.op && k == o.k {
						return f
					}
					return pass
				})
				res := catalogtest.MustPut(t, s, "id", catalogtest.Discover(b, time.Minute))
				if got := p.firedFaults(); len(got) != 1 {
					t.Fatalf("faults fired: %v, want exactly one", got)
				}
				if res.Superseded || res.Unchanged {
					t.Errorf("Put = %+v, want a new version", res)
				}
				catalogtest.AssertContent(t, catalogtest.MustGet(t, s, "id"), b)
				catalogtest.AssertOnlyVersion(t, s, "id", res.Version)
			})
		}
	}
}

// TestOutagesKeepTheCatalogWhole fails every request from the nth on,
// for each point of a replacing Put; the budget runs out. Readers then see
// one whole version, and every item outside the current version carries
// the TTL attribute. A later Put succeeds.
func TestOutagesKeepTheCatalogWhole(t *testing.T) {
	t.Parallel()
	// A replacing Put of b over a: 2 GetItems, Query, 2 BatchWriteItems,
	// UpdateItem, 2+1 BatchWriteItems.
	const requests = 9
	for _, f := range []fault{throttle, dropAfter} {
		for n := 1; n <= requests+1; n++ {
			t.Run(fmt.Sprintf("%s from %d", f, n), func(t *testing.T) {
				t.Parallel()
				s, p, client, table := newProxied(t, fastBackoff)
				a, b, c := catalogtest.Listing(50, "a"), catalogtest.Listing(30, "b"), catalogtest.Listing(3, "c")
				ra := catalogtest.MustPut(t, s, "id", catalogtest.Discover(a, 0))
				p.arm(func(i, _ int, _ string) fault {
					if i >= n {
						return f
					}
					return pass
				})
				ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
				defer cancel()
				rb, err := s.Put(ctx, "id", catalogtest.Discover(b, time.Minute))
				if err != nil && !errors.Is(err, catalog.ErrUnavailable) {
					t.Fatalf("Put during an outage: %v, want nil or ErrUnavailable", err)
				}
				p.cut() // the outage's requests have landed; read past the proxy
				direct := catalog.NewDynamo(catalogtest.Strict(t, client), table)

				got := catalogtest.MustGet(t, direct, "id")
				switch {
				case err == nil && got.Version != rb.Version:
					t.Errorf("Put succeeded with %s but the catalog is at %s", rb.Version, got.Version)
				case got.Version == ra.Version:
					catalogtest.AssertContent(t, got, a)
				default: // the flip landed, whatever Put could tell
					catalogtest.AssertContent(t, got, b)
				}
				for _, item := range rawItems(t, client, table) {
					if expiresAt(item) == 0 {
						t.Errorf("item %v has no %s", item["sk"], catalog.TTLAttribute)
					}
				}

				rc := catalogtest.MustPut(t, direct, "id", catalogtest.Discover(c, 2*time.Minute))
				catalogtest.AssertContent(t, catalogtest.MustGet(t, direct, "id"), c)
				versions, err := direct.StoredVersions(context.Background(), "id")
				if err != nil {
					t.Fatal(err)
				}
				if len(versions) == 0 || versions[len(versions)-1] != rc.Version {
					t.Errorf("stored versions %v, want the newest %s last", versions, rc.Version)
				}
			})
		}
	}
}
