package runnertest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/internal/localstack"
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
// body with their string attributes (see localstack.Drain).
func Drain(tb testing.TB, client *sqs.Client, url string, want int) []Message {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := localstack.Drain(ctx, client, url, want)
	if err != nil {
		tb.Fatalf("runnertest: %v", err)
	}
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
