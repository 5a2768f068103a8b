package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// callQueue is a moto queue standing for CallQueue: the records the test
// feeds the call function carry its ARN as eventSourceARN.
type callQueue struct{ url, arn string }

func newCallQueue(t *testing.T, s *stack) callQueue {
	t.Helper()
	out, err := s.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(awstest.UniqueName("e2e-call"))})
	if err != nil {
		t.Fatal(err)
	}
	q := callQueue{url: aws.ToString(out.QueueUrl)}
	attrs, err := s.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	q.arn = attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return q
}

// deliver invokes the call function with one record from q, as the event
// source mapping would, and returns the batch item failures.
func (q callQueue) deliver(t *testing.T, s *stack, id, body string) []string {
	t.Helper()
	ev := map[string]any{"Records": []map[string]any{{
		"messageId": id, "receiptHandle": "receipt-" + id, "body": body, "eventSource": "aws:sqs",
		"eventSourceARN": q.arn, "awsRegion": "us-east-1", "attributes": map[string]string{"ApproximateReceiveCount": "1"},
	}}}
	return batchFailures(t, invoke(t, s.call, mustJSON(t, ev)))
}

// next waits up to 6 s for q's next message and deletes it.
func (q callQueue) next(t *testing.T, s *stack) (sqstypes.Message, bool) {
	t.Helper()
	out, err := s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), WaitTimeSeconds: 6, MaxNumberOfMessages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) == 0 {
		return sqstypes.Message{}, false
	}
	m := out.Messages[0]
	if _, err := s.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	return m, true
}

// TestSQSPendingCallComesBack: through the real call bootstrap under the
// RIE, a task called from SQS without a task token sends its request back
// to its own queue (found by the record's eventSourceARN), delayed by
// poll_after_seconds, once per working poll, until it completes: one
// tools/call, three tasks/get, every record done, nothing dead-lettered,
// and the recorded tool_result is what a direct request under the same key
// replays. An input_required answer is the one dead letter, carrying the
// input requests, and nothing comes back.
func TestSQSPendingCallComesBack(t *testing.T) {
	url, counters := taskServer(t, &mcptest.Tasks{Polls: 2, PollIntervalMs: 500})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, url)}, env: []string{"MCPFN_TASK_POLL_MIN_SECONDS=2"}})
	q := newCallQueue(t, s)

	body := string(mustJSON(t, map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskSleep}))
	id, rounds := "e2e-first", 0
	for ; rounds < 10; rounds++ {
		sent := time.Now()
		if failed := q.deliver(t, s, id, body); len(failed) != 0 {
			t.Fatalf("round %d: batch item failures %v", rounds+1, failed)
		}
		m, ok := q.next(t, s)
		if !ok {
			break
		}
		// A lower bound only: the request cannot come back before its delay.
		if waited := time.Since(sent); waited < 2*time.Second {
			t.Errorf("round %d: came back after %s, before its 2 s delay", rounds+1, waited)
		}
		body, id = aws.ToString(m.Body), aws.ToString(m.MessageId)
		if !strings.Contains(body, `"idempotency_key":"e2e-first"`) {
			t.Fatalf("round %d: sent back %s, want it keyed by the first message id", rounds+1, body)
		}
	}
	if rounds != 3 {
		t.Errorf("the request came back %d times, want 3", rounds)
	}
	if c, g := countMethod(counters, "tools/call"), countMethod(counters, "tasks/get"); c != 1 || g != 3 {
		t.Errorf("tools/call %d, tasks/get %d; want 1 and 3", c, g)
	}
	if dead := s.drainDLQ(t, "call"); len(dead) != 0 {
		t.Errorf("dead letters %v, want none", dead)
	}
	res := invoke(t, s.call, mustJSON(t, map[string]any{"server_url": url, "tool_name": mcptest.ToolTaskSleep, "idempotency_key": "e2e-first"}))
	if !strings.Contains(string(res.Payload), `"type":"tool_result"`) || strings.Contains(string(res.Payload), `"is_error":true`) || countMethod(counters, "tasks/get") != 3 {
		t.Errorf("replay = %s %s, want the recorded tool_result without a request", res.Payload, res.ErrorMessage)
	}

	ask := string(mustJSON(t, map[string]any{"server_url": url, "tool_name": mcptest.ToolAskTwice}))
	if failed := q.deliver(t, s, "e2e-ask", ask); len(failed) != 0 {
		t.Fatalf("input_required: batch item failures %v", failed)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dead, err := localstack.Drain(ctx, s.sqs, s.dlq["call"], 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Attributes["mcpfn.error_type"] != "mcp_protocol_error" ||
		!strings.Contains(dead[0].Attributes["mcpfn.input_requests"], `"q1"`) || !strings.Contains(dead[0].Body, `"idempotency_key":"e2e-ask"`) {
		t.Errorf("dead letters %+v, want one mcp_protocol_error with the input requests and the keyed request", dead)
	}
	if m, ok := q.next(t, s); ok {
		t.Errorf("an input_required call came back: %s", aws.ToString(m.Body))
	}
}
