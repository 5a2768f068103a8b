package runnertest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/shared/awstest"
)

// NewQueue creates a standard queue with a unique name and returns its URL.
func NewQueue(tb testing.TB, client *sqs.Client, prefix string) string {
	tb.Helper()
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(awstest.UniqueName(prefix))})
	if err != nil {
		tb.Fatalf("runnertest: create queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

// Drain receives every message of the queue at url until want messages
// arrived or ten seconds passed, deleting each, and returns them sorted by
// body with their string attributes.
func Drain(tb testing.TB, client *sqs.Client, url string, want int) []Message {
	tb.Helper()
	ctx := context.Background()
	var got []Message
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(url),
			MaxNumberOfMessages:   10,
			MessageAttributeNames: []string{"All"},
			WaitTimeSeconds:       1,
		})
		if err != nil {
			tb.Fatalf("runnertest: receive from %s: %v", url, err)
		}
		for _, m := range out.Messages {
			msg := Message{QueueURL: url, Body: aws.ToString(m.Body), Attributes: map[string]string{}}
			for k, v := range m.MessageAttributes {
				msg.Attributes[k] = aws.ToString(v.StringValue)
			}
			got = append(got, msg)
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				tb.Fatalf("runnertest: delete from %s: %v", url, err)
			}
		}
	}
	slices.SortStableFunc(got, func(a, b Message) int { return cmpString(a.Body, b.Body) })
	return got
}

// Pending returns how many messages the queue at url holds, visible or in
// flight (exact on moto).
func Pending(tb testing.TB, client *sqs.Client, url string) int {
	tb.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		tb.Fatalf("runnertest: attributes of %s: %v", url, err)
	}
	n := 0
	for _, v := range out.Attributes {
		c, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("runnertest: attributes of %s: %v", url, err)
		}
		n += c
	}
	return n
}
