package runnertest_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// TestPending counts visible and in-flight messages, so an empty queue
// proves nothing was sent.
func TestPending(t *testing.T) {
	m := awstest.SharedMoto(t)
	client := sqs.NewFromConfig(m.Config(t.Context()))
	url := runnertest.NewQueue(t, client, "pending")
	if n := runnertest.Pending(t, client, url); n != 0 {
		t.Fatalf("new queue: %d pending, want 0", n)
	}
	for _, b := range []string{"a", "b"} {
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1}); err != nil {
		t.Fatal(err)
	}
	if n := runnertest.Pending(t, client, url); n != 2 {
		t.Errorf("one visible, one in flight: %d pending, want 2", n)
	}
}
