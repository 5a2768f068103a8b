// Package runnertest holds fakes for testing code built on package runner:
// a recording Step Functions (Tasks, localstack's), a recording SQS, SQS event builders, a
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
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/runner"
)

var (
	_ runner.TaskAPI  = (*Tasks)(nil)
	_ runner.QueueAPI = (*Queue)(nil)
)

// TaskReport is one SendTaskSuccess or SendTaskFailure (see
// localstack.TaskReport).
type TaskReport = localstack.TaskReport

// Tasks is a recording Step Functions (see localstack.Tasks).
type Tasks = localstack.Tasks

// Message is one message sent to a queue (localstack.Message).
type Message = localstack.Message

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
