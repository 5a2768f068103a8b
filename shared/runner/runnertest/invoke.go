package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Invocation is what one invocation produced, in a stable form for golden
// files: the result or the wire error, the task reports, the dead-lettered
// messages and the summary lines without their time.
type Invocation struct {
	Result      json.RawMessage                `json:"result,omitempty"`
	Error       *messages.InvokeResponse_Error `json:"error,omitempty"`
	TaskReports []TaskReport                   `json:"task_reports,omitempty"`
	DeadLetters []Message                      `json:"dead_letters,omitempty"`
	Summaries   []map[string]any               `json:"summaries"`
}

// Invoke calls handle with payload and collects what it produced into an
// Invocation; tasks, queue and logs are the fakes the handler reports to.
// An error that is not a messages.InvokeResponse_Error is reported with
// Type "not a wire error".
func Invoke(ctx context.Context, handle func(context.Context, json.RawMessage) (any, error), payload []byte, tasks *Tasks, queue *Queue, logs *Lines) Invocation {
	out, err := handle(ctx, payload)
	var inv Invocation
	if err != nil {
		var ive messages.InvokeResponse_Error
		if !errors.As(err, &ive) {
			ive = messages.InvokeResponse_Error{Type: "not a wire error", Message: fmt.Sprintf("%T: %v", err, err)}
		}
		inv.Error = &ive
	}
	if out != nil {
		b, merr := json.Marshal(out)
		if merr != nil {
			b, _ = json.Marshal(fmt.Sprintf("result does not marshal: %v", merr))
		}
		inv.Result = b
	}
	inv.TaskReports = tasks.Reports()
	inv.DeadLetters = queue.Sent()
	inv.Summaries = logs.Summaries()
	for _, s := range inv.Summaries {
		delete(s, "time")
	}
	return inv
}

// WireType is the errorType aws-lambda-go reports for err: the Type of a
// messages.InvokeResponse_Error value, else err's Go type; "" for nil.
func WireType(err error) string {
	if err == nil {
		return ""
	}
	if ive, ok := err.(messages.InvokeResponse_Error); ok {
		return ive.Type
	}
	return fmt.Sprintf("%T", err)
}
