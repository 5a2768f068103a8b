package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/ledger"
)

// ledgerAPI is the method set Dynamo and Memory share; the call function
// declares the same interface.
type ledgerAPI interface {
	Begin(ctx context.Context, key string) (ledger.Entry, error)
	Complete(ctx context.Context, key string, o ledger.Outcome) error
	Release(ctx context.Context, key string) error
	Suspend(ctx context.Context, key string, p ledger.Pending) error
}

var (
	_ ledgerAPI = (*ledger.Dynamo)(nil)
	_ ledgerAPI = (*ledger.Memory)(nil)
)

const lease = time.Minute

// clock is a settable time source shared by the peers of one test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// store makes n ledger values on one set of records, as n function
// instances would see them, all reading clk.
type store struct {
	name string
	new  func(t *testing.T, clk *clock, n int) []ledgerAPI
}

var stores = []store{
	{"memory", func(t *testing.T, clk *clock, n int) []ledgerAPI {
		first := ledger.NewMemory(lease)
		first.Now = clk.Now
		out := []ledgerAPI{first}
		for len(out) < n {
			out = append(out, first.Peer())
		}
		return out
	}},
	{"dynamo", func(t *testing.T, clk *clock, n int) []ledgerAPI {
		api, table := newTable(t)
		strict := localstack.NewStrict(api) // one for all n, so their writes exclude each other
		var out []ledgerAPI
		for range n {
			d := ledger.NewDynamo(strict, table, lease)
			d.Now = clk.Now
			out = append(out, d)
		}
		return out
	}},
}

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// newTable creates a ledger table of its own on the binary's moto server.
func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	return awstest.NewTable(t, awstest.SharedMoto(t), "ledger", ledger.CreateTable)
}

func forEachStore(t *testing.T, f func(t *testing.T, s store)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			f(t, s)
		})
	}
}

func mustBegin(t *testing.T, l ledgerAPI, key string, want ledger.Entry) {
	t.Helper()
	got, err := l.Begin(t.Context(), key)
	if err != nil {
		t.Fatalf("Begin(%.20q): %v", key, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Begin(%.20q) (-want +got):\n%s", key, diff)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

var outcome = ledger.Outcome{Result: json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_1","is_error":false,"content":[]}`)}

func TestCompletedCallIsReturned(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 2)
		mustBegin(t, l[0], "toolu_1", ledger.Entry{})
		_, err := l[1].Begin(t.Context(), "toolu_1")
		wantErr(t, "Begin while leased", err, ledger.ErrInProgress)
		if err := l[0].Complete(t.Context(), "toolu_1", outcome); err != nil {
			t.Fatal(err)
		}
		for i, li := range l {
			got, err := li.Begin(t.Context(), "toolu_1")
			if err != nil {
				t.Fatalf("ledger %d: Begin after Complete: %v", i, err)
			}
			if diff := cmp.Diff(ledger.Entry{Done: true, Outcome: outcome}, got); diff != "" {
				t.Errorf("ledger %d: Begin after Complete (-want +got):\n%s", i, diff)
			}
		}
		wantErr(t, "second Complete", l[0].Complete(t.Context(), "toolu_1", outcome), ledger.ErrNotOwner)
	})
}

func TestErrorOutcomeRoundTrips(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 1)
		o := ledger.Outcome{ErrorType: "mcp_authentication_failed_error", Message: "the server answered 401"}
		mustBegin(t, l[0], "m-1", ledger.Entry{})
		if err := l[0].Complete(t.Context(), "m-1", o); err != nil {
			t.Fatal(err)
		}
		mustBegin(t, l[0], "m-1", ledger.Entry{Done: true, Outcome: o})
	})
}

func TestConcurrentBeginOneStarts(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		const n = 8
		l := s.new(t, newClock(), n)
		var wg sync.WaitGroup
		errs := make([]error, n)
		entries := make([]ledger.Entry, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				entries[i], errs[i] = l[i].Begin(t.Context(), "same-key")
			})
		}
		close(start)
		wg.Wait()
		started := 0
		for i, err := range errs {
			switch {
			case err == nil && !entries[i].Done:
				started++
			case errors.Is(err, ledger.ErrInProgress):
			default:
				t.Errorf("ledger %d: Begin = %+v, %v", i, entries[i], err)
			}
		}
		if started != 1 {
			t.Errorf("%d of %d concurrent Begin calls started, want exactly 1", started, n)
		}
	})
}

func TestSameValueDoubleBegin(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 1)
		mustBegin(t, l[0], "dup-in-batch", ledger.Entry{})
		_, err := l[0].Begin(t.Context(), "dup-in-batch")
		wantErr(t, "second Begin on the same value", err, ledger.ErrInProgress)
		if err := l[0].Complete(t.Context(), "dup-in-batch", outcome); err != nil {
			t.Fatalf("Complete by the first Begin's value: %v", err)
		}
	})
}

func TestExpiredLeaseIsTakenOver(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		clk := newClock()
		l := s.new(t, clk, 3)
		first, second := l[0], l[1]
		mustBegin(t, first, "slow", ledger.Entry{})

		clk.Advance(lease - time.Millisecond) // the lease's last instant
		_, err := second.Begin(t.Context(), "slow")
		wantErr(t, "Begin 1ms before expiry", err, ledger.ErrInProgress)

		clk.Advance(time.Millisecond) // expired
		mustBegin(t, second, "slow", ledger.Entry{TookOver: true})

		wantErr(t, "Complete by the expired holder", first.Complete(t.Context(), "slow", outcome), ledger.ErrNotOwner)
		wantErr(t, "Release by the expired holder", first.Release(t.Context(), "slow"), ledger.ErrNotOwner)
		_, err = l[2].Begin(t.Context(), "slow")
		wantErr(t, "Begin while the new holder's lease is live", err, ledger.ErrInProgress)

		o := ledger.Outcome{Result: json.RawMessage(`"second"`)}
		if err := second.Complete(t.Context(), "slow", o); err != nil {
			t.Fatal(err)
		}
		mustBegin(t, first, "slow", ledger.Entry{Done: true, Outcome: o})
	})
}

func TestReleaseLetsRedeliveryRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 2)
		mustBegin(t, l[0], "retry-me", ledger.Entry{})
		wantErr(t, "Release by a value that never began", l[1].Release(t.Context(), "retry-me"), ledger.ErrNotOwner)
		if err := l[0].Release(t.Context(), "retry-me"); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "second Release", l[0].Release(t.Context(), "retry-me"), ledger.ErrNotOwner)
		mustBegin(t, l[1], "retry-me", ledger.Entry{})
		if err := l[1].Complete(t.Context(), "retry-me", outcome); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNonOwnerRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 2)
		wantErr(t, "Complete of an unknown key", l[0].Complete(t.Context(), "nobody", outcome), ledger.ErrNotOwner)
		mustBegin(t, l[0], "mine", ledger.Entry{})
		wantErr(t, "Complete by a peer", l[1].Complete(t.Context(), "mine", outcome), ledger.ErrNotOwner)
		// The holder is unaffected.
		if err := l[0].Complete(t.Context(), "mine", outcome); err != nil {
			t.Fatal(err)
		}
	})
}

func TestKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 2)
		_, err := l[0].Begin(t.Context(), "")
		wantErr(t, "Begin empty key", err, ledger.ErrEmptyKey)
		long := strings.Repeat("t", ledger.MaxKeyBytes+1) // a task token can be this long
		longer := long + "x"
		mustBegin(t, l[0], long, ledger.Entry{})
		mustBegin(t, l[0], longer, ledger.Entry{}) // distinct digest, distinct record
		_, err = l[1].Begin(t.Context(), long)
		wantErr(t, "Begin long key while leased", err, ledger.ErrInProgress)
		if err := l[0].Complete(t.Context(), long, outcome); err != nil {
			t.Fatal(err)
		}
		mustBegin(t, l[1], long, ledger.Entry{Done: true, Outcome: outcome})
	})
}

func TestErrorsDoNotQuoteLongKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 2)
		token := "AQCEAAAAKgAAAAMAAAAA" + strings.Repeat("s3cr3t", 40) // shaped like a task token
		mustBegin(t, l[0], token, ledger.Entry{})
		_, err := l[1].Begin(t.Context(), token)
		wantErr(t, "Begin while leased", err, ledger.ErrInProgress)
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error quotes the key: %v", err)
		}
	})
}

func TestCanceledContext(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 1)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := l[0].Begin(ctx, "k")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Begin with canceled context: %v, want context.Canceled", err)
		}
		if errors.Is(err, ledger.ErrInProgress) || errors.Is(err, ledger.ErrNotOwner) {
			t.Fatalf("a dependency failure reads as a verdict: %v", err)
		}
	})
}

func TestOutcomeTooLarge(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		l := s.new(t, newClock(), 1)
		mustBegin(t, l[0], "huge", ledger.Entry{})
		huge := ledger.Outcome{Result: json.RawMessage(`"` + strings.Repeat("x", ledger.MaxOutcomeBytes) + `"`)}
		wantErr(t, "Complete with a huge outcome", l[0].Complete(t.Context(), "huge", huge), ledger.ErrTooLarge)
		// The lease survives: the largest allowed outcome still completes.
		fits := ledger.Outcome{Result: json.RawMessage(`"` + strings.Repeat("x", ledger.MaxOutcomeBytes-len(`{"result":""}`)) + `"`)}
		if err := l[0].Complete(t.Context(), "huge", fits); err != nil {
			t.Fatalf("Complete with a %d-byte outcome: %v", ledger.MaxOutcomeBytes, err)
		}
		mustBegin(t, l[0], "huge", ledger.Entry{Done: true, Outcome: fits})
	})
}

// TestReleaseOfAGoneRecord: a record already deleted counts as released,
// since a retried Release after a lost answer finds it so; a record held
// by another delivery does not.
func TestReleaseOfAGoneRecord(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store) {
		clk := newClock()
		l := s.new(t, clk, 3)
		mustBegin(t, l[0], "gone", ledger.Entry{})
		clk.Advance(lease)
		mustBegin(t, l[1], "gone", ledger.Entry{TookOver: true})
		wantErr(t, "Release while another delivery holds it", l[0].Release(t.Context(), "gone"), ledger.ErrNotOwner)

		mustBegin(t, l[0], "gone-2", ledger.Entry{})
		clk.Advance(lease)
		mustBegin(t, l[1], "gone-2", ledger.Entry{TookOver: true})
		if err := l[1].Release(t.Context(), "gone-2"); err != nil {
			t.Fatal(err)
		}
		if err := l[0].Release(t.Context(), "gone-2"); err != nil {
			t.Errorf("Release of a record already deleted: %v, want success", err)
		}
		mustBegin(t, l[2], "gone-2", ledger.Entry{})
	})
}
