package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// selfQueue is a moto queue the call's records come from, and its ARN.
type selfQueue struct{ url, arn string }

func newSelfQueue(t *testing.T, s *stack) selfQueue {
	t.Helper()
	url := runnertest.NewQueue(t, s.SQS, "calls")
	out, err := s.SQS.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return selfQueue{url: url, arn: out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]}
}

// deliver runs body as a one-record batch from q, as the event source
// mapping would, and returns the batch item failures.
func (q selfQueue) deliver(t *testing.T, s *stack, id, body string) []events.SQSBatchItemFailure {
	t.Helper()
	ev := runnertest.SQSEvent(body)
	ev.Records[0].MessageId, ev.Records[0].EventSourceARN = id, q.arn
	out, err := s.Invoke(t, runnertest.Payload(ev), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return out.(events.SQSEventResponse).BatchItemFailures
}

// receive waits up to 6 s for q's next message, deletes it, and returns
// it; ok is false when none came.
func (q selfQueue) receive(t *testing.T, s *stack) (m sqstypes.Message, ok bool) {
	t.Helper()
	out, err := s.SQS.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), WaitTimeSeconds: 6, MaxNumberOfMessages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) == 0 {
		return m, false
	}
	m = out.Messages[0]
	if _, err := s.SQS.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	return m, true
}

// TestSQSPendingCallKeepsGoing: from SQS without a task token, a task
// sends its request back to its own queue, delayed by poll_after_seconds
// and keyed by the first message's id, once per poll, each record done,
// until the task completes: one tools/call, every poll a tasks/get, no
// dead letter; a direct request under the same key then replays the
// recorded result without a request.
func TestSQSPendingCallKeepsGoing(t *testing.T) {
	s := newStack(t, nil)
	s.handler.Redeliver, s.handler.TaskPollMin = &runner.QueueSender{API: s.SQS}, 2*time.Second
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{Polls: 2, PollIntervalMs: 500}})
	q := newSelfQueue(t, s)
	body := callBody(map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskSleep})

	id, rounds := "first-message", 0
	for ; rounds < 10; rounds++ {
		sent := time.Now()
		if failed := q.deliver(t, s, id, body); len(failed) != 0 {
			t.Fatalf("round %d: batch item failures %v", rounds+1, failed)
		}
		m, ok := q.receive(t, s)
		if !ok {
			break
		}
		// A lower bound only: the message cannot come back before its delay.
		if waited := time.Since(sent); waited < 2*time.Second {
			t.Errorf("round %d: the request came back after %s, before its 2 s delay", rounds+1, waited)
		}
		body, id = aws.ToString(m.Body), aws.ToString(m.MessageId)
		var req Request
		if err := json.Unmarshal([]byte(body), &req); err != nil || req.IdempotencyKey != "first-message" || req.ToolName != mcptest.ToolTaskSleep {
			t.Fatalf("round %d: sent back %s (%v), want the request keyed first-message", rounds+1, body, err)
		}
	}
	if rounds != 3 {
		t.Errorf("the request came back %d times, want 3 (one per working answer)", rounds)
	}
	if got, polls := methodCount(srv, "tools/call"), methodCount(srv, "tasks/get"); got != 1 || polls != 3 {
		t.Errorf("tools/call %d, tasks/get %d; want 1 and 3", got, polls)
	}
	if dead := runnertest.Pending(t, s.SQS, s.DLQ); dead != 0 {
		t.Errorf("%d dead letters, want none", dead)
	}
	out, typ := invoke(t, s, map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "first-message"})
	if typ != "" || !strings.Contains(out, `"type":"tool_result"`) || strings.Contains(out, `"is_error":true`) || methodCount(srv, "tasks/get") != 3 {
		t.Errorf("replay = %s %s (tasks/get %d), want the recorded tool_result and no request", out, typ, methodCount(srv, "tasks/get"))
	}
}

// TestSQSInputRequiredIsDeadLettered: an input_required answer from SQS
// without a task token is dead-lettered, the input requests in
// mcpfn.input_requests and the body keyed by the message id, nothing sent
// back; a continuation with input_responses under that key then runs the
// next round without a second first tools/call.
func TestSQSInputRequiredIsDeadLettered(t *testing.T) {
	s := newStack(t, nil)
	s.handler.Redeliver = &runner.QueueSender{API: s.SQS}
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{}})
	q := newSelfQueue(t, s)
	body := callBody(map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice})

	if failed := q.deliver(t, s, "ask-message", body); len(failed) != 0 {
		t.Fatalf("batch item failures %v", failed)
	}
	dead := runnertest.Drain(t, s.SQS, s.DLQ, 1)
	if len(dead) != 1 {
		t.Fatalf("dead letters %v, want one", dead)
	}
	d := dead[0]
	if d.Attributes["mcpfn.error_type"] != "mcp_protocol_error" || !strings.Contains(d.Attributes["mcpfn.input_requests"], `"q1"`) ||
		!strings.Contains(d.Body, `"idempotency_key":"ask-message"`) {
		t.Errorf("dead letter = %+v, want mcp_protocol_error, the input requests and the keyed body", d)
	}
	if n := runnertest.Pending(t, s.SQS, q.url); n != 0 {
		t.Errorf("%d messages sent back, want none", n)
	}
	out, typ := invoke(t, s, map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolAskTwice, "idempotency_key": "ask-message",
		"input_responses": map[string]any{"q1": map[string]any{"action": "accept", "content": map[string]string{"name": "q1"}}}})
	if typ != "" || !strings.Contains(out, `"q2"`) || methodCount(srv, "tools/call") != 2 {
		t.Errorf("continuation = %s %s (tools/call %d), want round 2 asking q2 and 2 tools/call", out, typ, methodCount(srv, "tools/call"))
	}
}

// TestSQSPendingCallStopsAfterMaxSQSWait: a task still working MaxSQSWait
// after the call first went pending is not sent back again but
// dead-lettered, pending_since in its attributes and the keyed request as
// its body; the call stays pending, and the server saw one tools/call.
func TestSQSPendingCallStopsAfterMaxSQSWait(t *testing.T) {
	s := newStack(t, nil)
	start := time.Now()
	now := start
	s.handler.Redeliver, s.handler.TaskPollMin, s.handler.Now = &runner.QueueSender{API: s.SQS}, time.Second, func() time.Time { return now }
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true, Tasks: &mcptest.Tasks{}})
	q := newSelfQueue(t, s)
	body := callBody(map[string]any{"server_url": srv.URL, "tool_name": mcptest.ToolTaskForever})

	if failed := q.deliver(t, s, "forever-message", body); len(failed) != 0 {
		t.Fatalf("batch item failures %v", failed)
	}
	m, ok := q.receive(t, s)
	if !ok {
		t.Fatal("the working call was not sent back")
	}
	now = start.Add(MaxSQSWait)
	if failed := q.deliver(t, s, aws.ToString(m.MessageId), aws.ToString(m.Body)); len(failed) != 0 {
		t.Fatalf("batch item failures %v", failed)
	}
	dead := runnertest.Drain(t, s.SQS, s.DLQ, 1)
	if len(dead) != 1 || dead[0].Attributes["mcpfn.pending_since"] != start.UTC().Format(time.RFC3339) ||
		!strings.Contains(dead[0].Body, `"idempotency_key":"forever-message"`) || dead[0].Attributes["mcpfn.error_type"] != "mcp_protocol_error" {
		t.Errorf("dead letters %+v, want one with pending_since %s and the keyed request", dead, start.UTC().Format(time.RFC3339))
	}
	if n := runnertest.Pending(t, s.SQS, q.url); n != 0 {
		t.Errorf("%d messages sent back after MaxSQSWait, want none", n)
	}
	if got, polls := methodCount(srv, "tools/call"), methodCount(srv, "tasks/get"); got != 1 || polls != 1 {
		t.Errorf("tools/call %d, tasks/get %d; want 1 and 1", got, polls)
	}
}
