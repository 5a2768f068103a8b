package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// LongCallConfig sets up LongCall: Node runs RunScript (e2e/sfn/run.mjs)
// on Definition (statemachine/call.asl.json); Bootstrap is the call
// function under the RIE, its ledger a table in Moto. The fixture task
// completes after TaskDuration on its own clock, answering PollIntervalMs;
// PollFloor is MCPFN_TASK_POLL_MIN_SECONDS (0: the function's default).
type LongCallConfig struct {
	Node, RunScript, Definition string
	Bootstrap, RIE, CatalogDir  string
	Moto                        *localstack.Moto
	TaskDuration                time.Duration
	PollIntervalMs              int64
	PollFloor                   int
}

// LongCallCost is what one long call cost, run to its end through the
// call state machine. Durations are the runtime's REPORT Duration of each
// invocation; Init is the cold start's Init Duration. Transitions counts
// the states entered; Waited sums the Wait states' seconds, which the
// fixture's clock advanced by instead of waiting them.
type LongCallCost struct {
	Status           string
	Output           string
	Durations        []time.Duration
	Init             time.Duration
	ToolCalls, Polls int
	Transitions      int
	Waited           time.Duration
}

// BilledMs is the billed Lambda time: each invocation's duration rounded
// up to the millisecond, plus the cold start's init the same way.
func (c LongCallCost) BilledMs() int64 {
	ms := int64(math.Ceil(float64(c.Init) / float64(time.Millisecond)))
	for _, d := range c.Durations {
		ms += int64(math.Ceil(float64(d) / float64(time.Millisecond)))
	}
	return ms
}

// LongCall runs one call of a fixture task that completes after
// cfg.TaskDuration through the call state machine in aws-local-stepfunctions
// (Wait states overridden to 0 ms) against the real call bootstrap under
// the RIE, and measures what it cost. Between the machine and the function
// sits a proxy that advances the fixture's clock by each pending answer's
// poll_after_seconds: the time the Wait state that follows stands for.
func LongCall(ctx context.Context, cfg LongCallConfig) (LongCallCost, error) {
	var cost LongCallCost
	now := time.Now()
	clock := &virtualClock{t: now}
	h, counters := mcptest.NewHandler(mcptest.Options{Stateless: true,
		Tasks: &mcptest.Tasks{Delay: cfg.TaskDuration, PollIntervalMs: cfg.PollIntervalMs, Now: clock.Now}})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv, err := serveLoopback(mux)
	if err != nil {
		return cost, err
	}
	defer srv.Close()

	_, table, err := localstack.NewTable(ctx, cfg.Moto, "longcall", func(ctx context.Context, db *dynamodb.Client, name string) error {
		return ledger.CreateTable(ctx, db, name)
	})
	if err != nil {
		return cost, err
	}
	env := append(cfg.Moto.Environ(), "MCPFN_EGRESS_ALLOW="+AllowEntry(srv.url), "MCPFN_CALLS_TABLE="+table,
		"MCPFN_CATALOG_DIR="+cfg.CatalogDir, "MCPFN_LOCAL=1")
	if cfg.PollFloor > 0 {
		env = append(env, "MCPFN_TASK_POLL_MIN_SECONDS="+strconv.Itoa(cfg.PollFloor))
	}
	f, err := localstack.StartFunction(localstack.Config{Bootstrap: cfg.Bootstrap, RIE: cfg.RIE, Name: "call", Timeout: time.Minute, Env: env})
	if err != nil {
		return cost, err
	}
	defer f.Stop()

	proxy, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		resp, err := http.Post(f.URL(), "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		var p struct {
			Type             string `json:"type"`
			PollAfterSeconds int    `json:"poll_after_seconds"`
		}
		if json.Unmarshal(answer, &p) == nil && p.Type == "mcp_call_pending" {
			clock.advance(time.Duration(p.PollAfterSeconds) * time.Second)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}))
	if err != nil {
		return cost, err
	}
	defer proxy.Close()

	ex, err := runMachine(ctx, cfg, proxy.url, map[string]any{"server_url": srv.url + "/mcp", "tool_name": mcptest.ToolTaskSleep})
	if err != nil {
		return cost, err
	}
	cost.Status, cost.Output = ex.Status, string(ex.Output)
	if ex.Status != "SUCCEEDED" {
		cost.Output = ex.Error + ": " + ex.Cause
	}
	cost.Transitions = len(ex.Entered())
	cost.Waited = clock.Now().Sub(now)
	for _, m := range counters.Methods() {
		switch m {
		case "tools/call":
			cost.ToolCalls++
		case "tasks/get":
			cost.Polls++
		}
	}
	cost.Durations, cost.Init, err = reportDurations(f.Logs())
	return cost, err
}

// runMachine runs cfg.Definition once with input, every call Task state
// invoking url, every Wait 0 ms.
func runMachine(ctx context.Context, cfg LongCallConfig, url string, input any) (localstack.Execution, error) {
	zero := 0
	return localstack.RunMachine(ctx, localstack.MachineRun{
		Node: cfg.Node, Script: cfg.RunScript, Definition: cfg.Definition,
		Substitutions: map[string]string{
			"CallFunctionArn":       "arn:aws:lambda:us-east-1:123456789012:function:mcpfn-call",
			"InputRequestsQueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-InputRequestsQueue",
			"MaxCallWaitSeconds":    "86400",
			"InputTimeoutSeconds":   "86400",
		},
		Input:  input,
		Tasks:  map[string]string{"CallTool": url, "AnswerTool": url, "Cancel": url},
		WaitMs: &zero,
		Context: map[string]any{
			"Execution":    map[string]any{"Id": "arn:aws:states:us-east-1:123456789012:execution:mcpfn-call:bench-longcall", "Name": "bench-longcall"},
			"StateMachine": map[string]any{"Id": "arn:aws:states:us-east-1:123456789012:stateMachine:mcpfn-call", "Name": "mcpfn-call"},
		},
	})
}

// reportLine finds a REPORT line's durations: Init, Billed or none.
var reportLine = regexp.MustCompile(`(Init |Billed )?Duration: ([0-9.]+) ms`)

// reportDurations reads every REPORT line of logs: each invocation's
// Duration, and the sum of Init Durations.
func reportDurations(logs []string) (durs []time.Duration, init time.Duration, err error) {
	for _, l := range logs {
		if !strings.HasPrefix(l, "REPORT RequestId:") {
			continue
		}
		found := false
		for _, m := range reportLine.FindAllStringSubmatch(l, -1) {
			ms, perr := strconv.ParseFloat(m[2], 64)
			if perr != nil {
				return nil, 0, fmt.Errorf("bench: REPORT line %q: %w", l, perr)
			}
			d := time.Duration(ms * float64(time.Millisecond))
			switch m[1] {
			case "Init ":
				init += d
			case "":
				durs, found = append(durs, d), true
			}
		}
		if !found {
			return nil, 0, fmt.Errorf("bench: REPORT line without a Duration: %q", l)
		}
	}
	return durs, init, nil
}

// virtualClock is the fixture task's clock: it moves only when advanced.
type virtualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *virtualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// loopbackServer is an HTTP server on a free loopback port.
type loopbackServer struct {
	srv *http.Server
	url string
}

func serveLoopback(h http.Handler) (*loopbackServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &loopbackServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String()}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *loopbackServer) Close() { _ = s.srv.Close() }
