package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
	"github.com/mcpfn/mcpfn/shared/wire"
)

const childEnv = "MCPFN_WORK_LAMBDA_CHILD"

// TestLambdaChild is the function process TestLambdaReportsTheWireType
// starts; it does nothing in a normal test run.
func TestLambdaChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	r, err := runner.NewRunner(runner.Config{Function: "child", Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard},
		runner.ProcessorFunc(func(ctx context.Context, it *runner.Item) (any, error) {
			var s script
			if err := runner.Decode(it.Body, &s); err != nil {
				return nil, err
			}
			if s.Kind == "ok" {
				return map[string]string{"item": it.ID}, nil
			}
			return nil, wire.Errorf(wire.ErrorType(s.Kind), nil, "%s happened", s.Kind)
		}))
	if err != nil {
		t.Fatal(err)
	}
	lambda.Start(r)
}

// runtimeAPI is a fake Lambda Runtime API: it hands out the queued
// invocations, records what the function posts back, and answers the next
// poll after the queue empties with 500, which ends the function process.
type runtimeAPI struct {
	mu     sync.Mutex
	queue  []string
	posted map[string]string // "<id>/response" or "<id>/error" -> body
}

func (a *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/2018-06-01/runtime/invocation/"
	a.mu.Lock()
	defer a.mu.Unlock()
	rest := strings.TrimPrefix(r.URL.Path, base)
	if r.Method == http.MethodGet && rest == "next" {
		if len(a.queue) == 0 {
			http.Error(w, "no more invocations", http.StatusInternalServerError)
			return
		}
		id := "inv-" + strconv.Itoa(len(a.posted))
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", id)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:child")
		_, _ = io.WriteString(w, a.queue[0])
		a.queue = a.queue[1:]
		return
	}
	body, _ := io.ReadAll(r.Body)
	a.posted[rest] = string(body)
	w.WriteHeader(http.StatusAccepted)
}

// TestLambdaReportsTheWireType pins what aws-lambda-go v1.55.1 does with the
// runner's answers: a returned messages.InvokeResponse_Error value reaches
// the Runtime API with its Type as errorType (lambdaErrorResponse).
func TestLambdaReportsTheWireType(t *testing.T) {
	api := &runtimeAPI{
		queue: []string{
			body("mcp_authentication_failed_error"),
			`{"kind":"ok","surprise":1}`,
			body("ok"),
			string(runnertest.Payload(runnertest.SQSEvent(body("ok"), body("mcp_connection_failed_error")))),
			`not JSON`,
			`{"kind":"ok","KIND":"x"}`,
		},
		posted: map[string]string{},
	}
	srv := httptest.NewServer(api)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLambdaChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1", "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"))
	out, err := cmd.CombinedOutput() // exits when the seventh poll gets 500
	if ctx.Err() != nil {
		t.Fatalf("function process did not exit: %v\n%s", err, out)
	}

	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return fmt.Sprintf("not JSON: %q", s)
		}
		return v
	}
	got := map[string]any{}
	for k, v := range api.posted {
		got[k] = decode(v)
	}
	want := map[string]any{
		"inv-0/error":    map[string]any{"errorType": "mcp_authentication_failed_error", "errorMessage": "mcp_authentication_failed_error happened"},
		"inv-1/error":    map[string]any{"errorType": "invalid_request_error", "errorMessage": `unknown field "surprise"`},
		"inv-2/response": map[string]any{"item": "inv-2"},
		"inv-3/response": map[string]any{"batchItemFailures": []any{map[string]any{"itemIdentifier": "msg-1"}}},
		"inv-4/error":    map[string]any{"errorType": "invalid_request_error", "errorMessage": "the request must be a JSON object"},
		"inv-5/error":    map[string]any{"errorType": "invalid_request_error", "errorMessage": `unknown field "KIND"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("posted to the Runtime API (-want +got):\n%s\nfunction output:\n%s", diff, out)
	}
}
