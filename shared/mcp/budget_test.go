package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBudgets pins the published budgets, the clients' request caps, and
// that the operations run under exactly those budgets.
func TestBudgets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"DialTimeout", DialTimeout, 30 * time.Second},
		{"ListTimeout", ListTimeout, 2 * time.Minute},
		{"CallTimeout", CallTimeout, 2 * time.Minute},
		{"DefaultClient.Timeout", DefaultClient.Timeout, DialTimeout},
		{"CallClient.Timeout", CallClient.Timeout, CallTimeout},
		{"Connect's budget", connectBudget, DialTimeout},
		{"ListTools' budget", listBudget, ListTimeout},
		{"CallTool's budget", callBudget, CallTimeout},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if MaxResponseBytes != 8<<20 {
		t.Errorf("MaxResponseBytes = %d, want %d", MaxResponseBytes, 8<<20)
	}
}

// shorten sets *budget to d for the rest of the test.
func shorten(t *testing.T, budget *time.Duration, d time.Duration) {
	t.Helper()
	orig := *budget
	*budget = d
	t.Cleanup(func() { *budget = orig })
}

// The budget tests give an operation a short budget, a caller's context
// and a client Timeout far beyond it, and a server that keeps the
// operation going: only the operation's own budget can end it in time.
const (
	shortBudget  = 400 * time.Millisecond
	callerBudget = 8 * time.Second
	endedInTime  = 4 * time.Second // generous: the budget plus the SDK's and this package's graces
)

func checkBudgetEnded(t *testing.T, what string, err error, took time.Duration) {
	t.Helper()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%s: err = %v, want context.DeadlineExceeded", what, err)
	}
	if took > endedInTime {
		t.Errorf("%s took %v with a %v budget, want under %v", what, took, shortBudget, endedInTime)
	}
	t.Logf("%s took %v", what, took.Round(time.Millisecond))
}

// TestConnectBudget: a server that never answers initialize holds Connect
// for its budget, not the caller's context or the client's Timeout.
func TestConnectBudget(t *testing.T) {
	shorten(t, &connectBudget, shortBudget)
	s := serveScripted(t, &scripted{hang: map[string]bool{"initialize": true, methodCancelled: true, "DELETE": true}})
	start := time.Now()
	c, err := Connect(testCtx(t, callerBudget), Config{URL: s.URL, HTTPClient: loopback(t, s.URL, time.Minute)})
	if err == nil {
		c.Close()
	}
	checkBudgetEnded(t, "Connect", err, time.Since(start))
}

// TestListToolsBudget: pages that each come well inside any per-request
// cap, with a new cursor each time, end at the listing's budget, long
// before the page limit.
func TestListToolsBudget(t *testing.T) {
	shorten(t, &listBudget, shortBudget)
	s := serveScripted(t, &scripted{hang: map[string]bool{methodCancelled: true, "DELETE": true},
		list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
			time.Sleep(100 * time.Millisecond) // 100 pages would take 10 s
			writeResult(w, id, map[string]any{"tools": []any{}, "nextCursor": cursor + "x"})
		}})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, time.Minute)})
	start := time.Now()
	_, err := c.ListTools(testCtx(t, callerBudget))
	checkBudgetEnded(t, "ListTools", err, time.Since(start))
	if pages := s.count("tools/list"); pages >= 20 {
		t.Errorf("tools/list requests = %d, want the few that fit the budget", pages)
	}
}

// TestCallToolBudget: a server that asks for roots on every attempt, a
// little slowly, makes the SDK re-send the call up to ten times; the
// call's budget ends it before they are done.
func TestCallToolBudget(t *testing.T) {
	shorten(t, &callBudget, shortBudget)
	s := serveScripted(t, &scripted{hang: map[string]bool{methodCancelled: true, "DELETE": true},
		call: func(w http.ResponseWriter, id json.RawMessage, _ json.RawMessage) {
			time.Sleep(150 * time.Millisecond) // 10 attempts would take 1.5 s
			rawResult(w, id, `{"resultType":"input_required","inputRequests":{"r1":{"method":"roots/list","params":{}}}}`)
		}})
	c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, time.Minute)})
	start := time.Now()
	_, err := c.CallTool(testCtx(t, callerBudget), "x", nil)
	checkBudgetEnded(t, "CallTool", err, time.Since(start))
	if errors.Is(err, ErrServerAnswered) {
		t.Errorf("err = %v, want the budget and not the SDK's attempt limit", err)
	}
	if attempts := s.count("tools/call"); attempts >= 10 {
		t.Errorf("tools/call requests = %d, want fewer than the SDK's 10", attempts)
	}
}

// TestSSEBudgetOverTheWire: a server answering text/event-stream past
// MaxResponseBytes, in one endless event or in many small ones that never
// answer, is cut at the budget; the server stops writing soon after.
func TestSSEBudgetOverTheWire(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(id json.RawMessage) string
		chunk string
	}{
		{"one endless event",
			func(id json.RawMessage) string {
				return `data: {"jsonrpc":"2.0","id":` + string(id) + `,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"description":"`
			},
			strings.Repeat("x", 64<<10)},
		{"many events, no answer",
			func(json.RawMessage) string { return "" },
			`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("y", 16<<10) + `"}}` + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var written atomic.Int64
			s := serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tc.start(id))
				for written.Load() < 1<<30 {
					n, err := w.Write([]byte(tc.chunk))
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}})
			c := mustConnect(t, Config{URL: s.URL, HTTPClient: loopback(t, s.URL, 30*time.Second)})
			_, err := c.ListTools(testCtx(t, 20*time.Second))
			if !errors.Is(err, ErrBudgetExceeded) || !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v, want ErrBudgetExceeded wrapping ErrProtocol", err)
			}
			if got := c.Stats().ResponseBytes; got <= MaxResponseBytes || got > MaxResponseBytes+128<<10 {
				t.Errorf("ResponseBytes = %d, want just past %d", got, MaxResponseBytes)
			}
			if _, err := c.CallTool(testCtx(t, 5*time.Second), "a", nil); !errors.Is(err, ErrBudgetExceeded) {
				t.Errorf("CallTool after the budget = %v, want ErrBudgetExceeded", err)
			}
			c.Close()
			if _, ok := within(5*time.Second, func() bool { return s.active.Load() == 0 }); !ok {
				t.Errorf("the server is still writing after Close")
			}
			if w := written.Load(); w > 256<<20 {
				t.Errorf("server wrote %d MiB, want it stopped soon after the budget", w>>20)
			}
		})
	}
}
