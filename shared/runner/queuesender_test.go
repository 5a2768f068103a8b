package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/runner"
)

// fakeSQS answers GetQueueUrl and records sends.
type fakeSQS struct {
	lookups []string
	sent    []*sqs.SendMessageInput
}

func (f *fakeSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	f.lookups = append(f.lookups, aws.ToString(in.QueueOwnerAWSAccountId)+"/"+aws.ToString(in.QueueName))
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs.example/" + aws.ToString(in.QueueOwnerAWSAccountId) + "/" + aws.ToString(in.QueueName))}, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{}, nil
}

// TestQueueSender: the URL comes from the ARN's name and account, looked
// up once per ARN; the delay is whole seconds, at most 900; an ARN that
// names no SQS queue is an error and sends nothing.
func TestQueueSender(t *testing.T) {
	f := &fakeSQS{}
	q := &runner.QueueSender{API: f}
	const arn = "arn:aws:sqs:us-east-1:123456789012:calls"
	for _, d := range []time.Duration{1500 * time.Millisecond, time.Hour} {
		if err := q.Redeliver(t.Context(), arn, []byte(`{"a":1}`), d); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.lookups) != 1 || f.lookups[0] != "123456789012/calls" {
		t.Errorf("lookups %v, want one of 123456789012/calls", f.lookups)
	}
	if len(f.sent) != 2 || f.sent[0].DelaySeconds != 1 || f.sent[1].DelaySeconds != 900 ||
		aws.ToString(f.sent[0].QueueUrl) != "https://sqs.example/123456789012/calls" || aws.ToString(f.sent[0].MessageBody) != `{"a":1}` {
		t.Errorf("sent %+v, want delays 1 and 900 to the looked-up URL", f.sent)
	}
	for _, bad := range []string{"", "not an arn", "arn:aws:sns:us-east-1:123456789012:topic", "arn:aws:sqs:us-east-1:123456789012:"} {
		if err := q.Redeliver(t.Context(), bad, nil, time.Second); err == nil || !strings.Contains(err.Error(), "names no SQS queue") {
			t.Errorf("Redeliver(%q) = %v, want names no SQS queue", bad, err)
		}
	}
	if len(f.sent) != 2 {
		t.Errorf("%d sends, want 2", len(f.sent))
	}
}
