package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SenderAPI is the SQS operations QueueSender needs.
type SenderAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ SenderAPI = (*sqs.Client)(nil)

// QueueSender sends a record's request back to the queue it came from
// (Item.Queue), delayed: a call that keeps going by itself. It finds a
// queue's URL from its ARN (GetQueueUrl by the queue's name and account),
// once per ARN. Safe for concurrent use.
type QueueSender struct {
	API  SenderAPI
	urls sync.Map // queue ARN → URL
}

// Redeliver sends body to the queue queueARN names, delayed by delay
// rounded down to whole seconds, at most 900 (SQS's longest delay).
func (q *QueueSender) Redeliver(ctx context.Context, queueARN string, body []byte, delay time.Duration) error {
	url, err := q.url(ctx, queueARN)
	if err != nil {
		return err
	}
	secs := int32(min(max(delay, 0), maxDelay) / time.Second)
	_, err = q.API.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body)), DelaySeconds: secs})
	return err
}

// maxDelay is SQS's longest DelaySeconds.
const maxDelay = 900 * time.Second

func (q *QueueSender) url(ctx context.Context, queueARN string) (string, error) {
	if u, ok := q.urls.Load(queueARN); ok {
		return u.(string), nil
	}
	a, err := arn.Parse(queueARN)
	if err != nil || a.Service != "sqs" || a.Resource == "" {
		return "", fmt.Errorf("the record's eventSourceARN %q names no SQS queue", queueARN)
	}
	out, err := q.API.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Resource), QueueOwnerAWSAccountId: aws.String(a.AccountID)})
	if err != nil {
		return "", err
	}
	url := aws.ToString(out.QueueUrl)
	q.urls.Store(queueARN, url)
	return url, nil
}
