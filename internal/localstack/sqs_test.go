package localstack

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"
)

// TestDrain takes every message, sorted by body with its attributes, and
// leaves the queue empty; waiting for more than arrive ends with ctx and
// returns what came, without an error.
func TestDrain(t *testing.T) {
	m := startMoto(t)
	client := sqs.NewFromConfig(m.Config(t.Context()))
	q, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(UniqueName("drain"))})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	for _, b := range []string{"c", "a", "b"} {
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v-" + b)}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Drain(t.Context(), client, url, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []Message
	for _, b := range []string{"a", "b", "c"} {
		want = append(want, Message{QueueURL: url, Body: b, Attributes: map[string]string{"k": "v-" + b}})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Drain (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if got, err := Drain(ctx, client, url, 1); err != nil || len(got) != 0 {
		t.Errorf("Drain of an empty queue, waiting for one = %v, %v; want none and no error", got, err)
	}
}
