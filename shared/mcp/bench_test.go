package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// BenchmarkOvershoot measures how long Connect, ListTools and CallTool run
// past a 100 ms deadline against a server that never answers, and how long
// Close then takes (its DELETE unanswered too). Metrics are per operation.
func BenchmarkOvershoot(b *testing.B) {
	const deadline = 100 * time.Millisecond
	overshoot := func(b *testing.B, op func(ctx context.Context) error) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		dl, _ := ctx.Deadline()
		if err := op(ctx); err == nil {
			b.Fatal("the operation succeeded against a silent server")
		}
		return time.Since(dl)
	}
	b.Run("Connect", func(b *testing.B) {
		u, _ := silentServer(b)
		client := loopback(b, u, 30*time.Second)
		var total time.Duration
		for b.Loop() {
			total += overshoot(b, func(ctx context.Context) error {
				_, err := Connect(ctx, Config{URL: u, HTTPClient: client})
				return err
			})
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "overshoot-ms/op")
	})
	for _, hang := range []string{"tools/list", "tools/call"} {
		b.Run(hang, func(b *testing.B) {
			s := serveScripted(b, &scripted{hang: map[string]bool{hang: true, methodCancelled: true, "DELETE": true}})
			client := loopback(b, s.URL, 30*time.Second)
			var over, closing time.Duration
			for b.Loop() {
				c, err := Connect(context.Background(), Config{URL: s.URL, HTTPClient: client})
				if err != nil {
					b.Fatal(err)
				}
				over += overshoot(b, func(ctx context.Context) error {
					if hang == "tools/list" {
						_, err := c.ListTools(ctx)
						return err
					}
					_, err := c.CallTool(ctx, "slow", nil)
					return err
				})
				start := time.Now()
				c.Close()
				closing += time.Since(start)
			}
			b.ReportMetric(float64(over.Milliseconds())/float64(b.N), "overshoot-ms/op")
			b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
		})
	}
}

// BenchmarkWorkItem runs one discovery-and-call work item (connect, list
// 3 pages, call, close) against go-sdk fixture servers of each era.
func BenchmarkWorkItem(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts mcptest.Options
	}{
		{"stateful", mcptest.Options{PageSize: 5, ExtraTools: 5}},
		{"stateless", mcptest.Options{Stateless: true, PageSize: 5, ExtraTools: 5}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := mcptest.NewServer(b, tc.opts)
			ctx := context.Background()
			for b.Loop() {
				c, err := Connect(ctx, Config{URL: s.URL, HTTPClient: s.Client()})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.ListTools(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := c.CallTool(ctx, "echo", []byte(`{"text":"hi"}`)); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkListingPage measures what this package adds per tools/list page
// of 50 tools (mcptest's catalog): reading the message as it arrives, and
// reconciling and checking its entries.
func BenchmarkListingPage(b *testing.B) {
	s := mcptest.NewServer(b, mcptest.Options{Stateless: true, ExtraTools: 40})
	c, err := Connect(context.Background(), Config{URL: s.URL, HTTPClient: s.Client()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var raw []byte // the page as it came, which the listing does not keep
	orig := listPage
	listPage = func(ctx context.Context, cs *sdk.ClientSession, p *sdk.ListToolsParams) (*sdk.ListToolsResult, error) {
		res, err := orig(ctx, cs, p)
		c.tr.mu.Lock()
		raw = bytes.Clone(c.tr.op.page.result)
		c.tr.mu.Unlock()
		return res, err
	}
	_, err = c.ListTools(context.Background())
	listPage = orig
	if err != nil {
		b.Fatal(err)
	}
	msg := []byte(`{"jsonrpc":"2.0","id":2,"result":` + string(raw) + `}`)
	var res sdk.ListToolsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		b.Fatal(err)
	}
	b.Run("observe", func(b *testing.B) {
		tr := newTransport(nil, &url.URL{Scheme: "http", Host: "127.0.0.1"}, "")
		defer tr.kill()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			op := tr.begin(func(error) {})
			tr.register(request{post: true, key: "n:2", method: "tools/list"})
			m, ok := readMessage(msg)
			tr.observe(op, m, ok, true, true)
			if _, ok := tr.takePage(op); !ok {
				b.Fatal("no page")
			}
		}
	})
	// validate-taken: the SDK was handed the page as slimToolsList makes
	// it, so each taken entry is decoded from the raw page here.
	slimmed, taken := slimToolsList(raw, raw)
	var slim sdk.ListToolsResult
	if err := json.Unmarshal(slimmed, &slim); err != nil || taken == 0 {
		b.Fatal(err, taken)
	}
	slim.Tools = slices.DeleteFunc(slim.Tools, func(t *sdk.Tool) bool { return t == nil })
	for _, bc := range []struct {
		name  string
		tools []*sdk.Tool
		page  keptPage
	}{
		{"validate", res.Tools, keptPage{result: raw}},
		{"validate-taken", slim.Tools, keptPage{result: raw, took: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				v := newValidator()
				if err := v.page(bc.tools, bc.page, nil); err != nil {
					b.Fatal(err)
				}
				if len(v.listing.Tools) != 50 {
					b.Fatalf("accepted %d tools, want 50", len(v.listing.Tools))
				}
			}
		})
	}
}

// cannedRT answers every request with the same JSON-RPC result.
type cannedRT struct{ body []byte }

func (c cannedRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)),
		Request:       r,
	}, nil
}

// BenchmarkRoundTrip measures what the transport adds to one POST through
// the http.Client Connect builds (the Timeout moved into the transport),
// over a RoundTripper that answers at once; bare has no Timeout, as
// net/http's own cheap path for its Transport costs about one context.
func BenchmarkRoundTrip(b *testing.B) {
	next := cannedRT{[]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello"}]}}`)}
	endpoint := &url.URL{Scheme: "http", Host: "127.0.0.1:1", Path: "/mcp"}
	body := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	run := func(b *testing.B, hc *http.Client, each func()) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for b.Loop() {
			each()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("bare", func(b *testing.B) {
		run(b, &http.Client{Transport: next}, func() {})
	})
	b.Run("transport", func(b *testing.B) {
		tr := newTransport(next, endpoint, "token")
		defer tr.kill()
		cancel := func(error) {}
		run(b, &http.Client{Transport: tr, Timeout: DialTimeout}, func() {
			tr.mu.Lock()
			tr.charged, tr.decoded = 0, 0 // a fresh budget per request
			tr.mu.Unlock()
			tr.begin(cancel)
		})
	})
}
