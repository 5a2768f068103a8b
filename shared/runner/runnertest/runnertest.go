// Package runnertest holds fakes for testing code built on package runner:
// a recording Step Functions, in process (Tasks) and over HTTP for a
// function binary (TaskRecorder), a recording SQS, SQS event builders, a
// Lambda context, and a function handler's surroundings in memory (Fakes)
// or over moto (Stack), with the checks both functions' tests share.
package runnertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/mcpfn/mcpfn/shared/runner"
)

var (
	_ runner.TaskAPI  = (*Tasks)(nil)
	_ runner.QueueAPI = (*Queue)(nil)
)

// TaskReport is one SendTaskSuccess (Error empty) or SendTaskFailure, as
// Tasks or a TaskRecorder received it.
type TaskReport struct {
	TaskToken string          `json:"task_token"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Cause     string          `json:"cause,omitempty"`
}

// Action names the call: "SendTaskSuccess" or "SendTaskFailure". It is
// exact because Tasks refuses a failure without an Error.
func (r TaskReport) Action() string {
	if r.Error == "" {
		return "SendTaskSuccess"
	}
	return "SendTaskFailure"
}

// Tasks records task reports, refusing what Step Functions refuses (an
// Output that is not JSON: *types.InvalidOutput; an Error over 256
// characters: a ValidationException) and a failure without an Error,
// which Step Functions accepts but the runner never sends. Fail, when set,
// is returned by every call (and nothing is recorded). With Once, a token
// takes one report, as in Step Functions: a later report for it gets
// *types.TaskTimedOut and is not recorded. Set both before use; the rest
// is safe for concurrent use.
type Tasks struct {
	Fail error
	Once bool

	mu      sync.Mutex
	reports []TaskReport
	closed  map[string]bool
}

// SendTaskSuccess records a success.
func (t *Tasks) SendTaskSuccess(_ context.Context, in *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	if t.Fail != nil {
		return nil, t.Fail
	}
	out := aws.ToString(in.Output)
	if !json.Valid([]byte(out)) {
		return nil, &sfntypes.InvalidOutput{Message: aws.String(fmt.Sprintf("runnertest: output is not JSON: %q", out))}
	}
	if err := t.record(TaskReport{TaskToken: aws.ToString(in.TaskToken), Output: json.RawMessage(out)}); err != nil {
		return nil, err
	}
	return &sfn.SendTaskSuccessOutput{}, nil
}

// SendTaskFailure records a failure.
func (t *Tasks) SendTaskFailure(_ context.Context, in *sfn.SendTaskFailureInput, _ ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	if t.Fail != nil {
		return nil, t.Fail
	}
	switch e := aws.ToString(in.Error); {
	case e == "":
		return nil, validation("runnertest: a failure without an error")
	case len(e) > 256:
		return nil, validation("runnertest: error longer than 256 characters")
	}
	if err := t.record(TaskReport{TaskToken: aws.ToString(in.TaskToken), Error: aws.ToString(in.Error), Cause: aws.ToString(in.Cause)}); err != nil {
		return nil, err
	}
	return &sfn.SendTaskFailureOutput{}, nil
}

// validation is the error the SDK returns for a ValidationException to
// SendTaskFailure, which has no type of its own there.
func validation(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg, Fault: smithy.FaultClient}
}

func (t *Tasks) record(r TaskReport) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Once {
		if t.closed[r.TaskToken] {
			return &sfntypes.TaskTimedOut{Message: aws.String("Task Timed Out: 'Provided task does not exist anymore'")}
		}
		if t.closed == nil {
			t.closed = map[string]bool{}
		}
		t.closed[r.TaskToken] = true
	}
	t.reports = append(t.reports, r)
	return nil
}

// Reset forgets the reports (a closed token stays closed).
func (t *Tasks) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports = nil
}

// Reports returns the reports sorted by task token.
func (t *Tasks) Reports() []TaskReport {
	out := t.arrived()
	slices.SortStableFunc(out, func(a, b TaskReport) int { return cmpString(a.TaskToken, b.TaskToken) })
	return out
}

// arrived returns the reports in the order they were recorded.
func (t *Tasks) arrived() []TaskReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.reports)
}

// Message is one message sent to a queue.
type Message struct {
	QueueURL   string            `json:"queue_url"`
	Body       string            `json:"body"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Queue records sent messages. Fail, when set, is returned by every send.
// Safe for concurrent use.
type Queue struct {
	Fail error

	mu   sync.Mutex
	sent []Message
}

// SendMessage records a message.
func (q *Queue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if q.Fail != nil {
		return nil, q.Fail
	}
	m := Message{QueueURL: aws.ToString(in.QueueUrl), Body: aws.ToString(in.MessageBody), Attributes: map[string]string{}}
	for k, v := range in.MessageAttributes {
		m.Attributes[k] = aws.ToString(v.StringValue)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, m)
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprintf("dlq-%d", len(q.sent)))}, nil
}

// Reset forgets the sent messages.
func (q *Queue) Reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = nil
}

// Sent returns the messages sorted by body.
func (q *Queue) Sent() []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := slices.Clone(q.sent)
	slices.SortStableFunc(out, func(a, b Message) int { return cmpString(a.Body, b.Body) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SQSEvent returns an SQS event with one record per body; record i has
// message id "msg-<i>".
func SQSEvent(bodies ...string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(bodies))}
	for i, b := range bodies {
		ev.Records[i] = events.SQSMessage{
			MessageId:      fmt.Sprintf("msg-%d", i),
			ReceiptHandle:  fmt.Sprintf("receipt-%d", i),
			Body:           b,
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:mcpfn-test",
			AWSRegion:      "us-east-1",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
		}
	}
	return ev
}

// Payload marshals v as an invocation payload.
func Payload(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Context returns ctx carrying a Lambda request id and, when timeout is
// positive, a deadline that far from now.
func Context(ctx context.Context, requestID string, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID})
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return context.WithCancel(ctx)
}

// Lines is an io.Writer collecting JSON lines (a log or metrics sink).
// Safe for concurrent use.
type Lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Reset forgets everything written.
func (l *Lines) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
}

// String returns everything written.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Records decodes every line as a JSON object. A line that does not decode
// is returned as {"unparsed": line}.
func (l *Lines) Records() []map[string]any {
	var out []map[string]any
	for line := range bytes.Lines([]byte(l.String())) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			m = map[string]any{"unparsed": string(line)}
		}
		out = append(out, m)
	}
	return out
}

// Summaries returns the "work item" summary lines, sorted by work_item.
func (l *Lines) Summaries() []map[string]any {
	var out []map[string]any
	for _, r := range l.Records() {
		if r["msg"] == "work item" {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b map[string]any) int {
		return cmpString(fmt.Sprint(a["work_item"]), fmt.Sprint(b["work_item"]))
	})
	return out
}
