package localstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Message is one message on a queue: its body and string attributes.
type Message struct {
	QueueURL   string            `json:"queue_url"`
	Body       string            `json:"body"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// QueueAPI is the part of *sqs.Client that Drain uses.
type QueueAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// Drain receives and deletes messages of the queue at url and returns them
// sorted by body. With want > 0 it waits until want messages arrived or ctx
// ends (which is then not an error: fewer come back); with want 0 it stops
// at the first empty receive. Other errors are the SDK's.
func Drain(ctx context.Context, client QueueAPI, url string, want int) ([]Message, error) {
	var got []Message
	wait := int32(0)
	if want > 0 {
		wait = 1
	}
	timedOut := func() bool { return want > 0 && ctx.Err() != nil }
	for (want == 0 || len(got) < want) && !timedOut() {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(url),
			MaxNumberOfMessages:   10,
			MessageAttributeNames: []string{"All"},
			WaitTimeSeconds:       wait,
		})
		if err != nil {
			if timedOut() {
				break
			}
			return got, fmt.Errorf("localstack: receive from %s: %w", url, err)
		}
		if want == 0 && len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			msg := Message{QueueURL: url, Body: aws.ToString(m.Body), Attributes: map[string]string{}}
			for k, v := range m.MessageAttributes {
				msg.Attributes[k] = aws.ToString(v.StringValue)
			}
			got = append(got, msg)
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return got, fmt.Errorf("localstack: delete from %s: %w", url, err)
			}
		}
	}
	slices.SortStableFunc(got, func(a, b Message) int { return strings.Compare(a.Body, b.Body) })
	return got, nil
}
