package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/aws/smithy-go"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAPI is the part of the SQS client a Sender uses.
type QueueAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// Sender enqueues discover requests to the discover queue at URL, each
// request the body of one message. It implements Enqueuer.
type Sender struct {
	API QueueAPI
	URL string
}

var _ Enqueuer = (*Sender)(nil)

// Send enqueues one request with SendMessage.
func (s *Sender) Send(ctx context.Context, req Request) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("schedule: encode the discover request: %w", err)
	}
	if _, err := s.API.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.URL), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("schedule: enqueue a discovery of %q: %w", req.CatalogID, err)
	}
	return nil
}

// Enqueue sends reqs with SendMessageBatch, ten a batch, and returns one
// error per request, nil only for an entry the answer lists as successful:
// a failed batch fails each of its requests, an entry listed as failed or
// not listed at all its own (ErrRefused). A batch that got no answer from
// SQS (ctx ended or the connection broke after the request left; not an
// error SQS answered, nor a batch never sent) fails its requests with
// ErrUnanswered: SQS may hold their messages.
func (s *Sender) Enqueue(ctx context.Context, reqs []Request) []error {
	errs := make([]error, len(reqs))
	for lo := 0; lo < len(reqs); lo += sendBatch {
		hi := min(lo+sendBatch, len(reqs))
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.URL)}
		for i := lo; i < hi; i++ {
			body, err := json.Marshal(reqs[i])
			if err != nil {
				errs[i] = fmt.Errorf("schedule: encode the discover request: %w", err)
				continue
			}
			in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body))})
		}
		if len(in.Entries) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			for i := lo; i < hi; i++ {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("schedule: enqueue a discovery of %q: not sent: %w", reqs[i].CatalogID, err)
				}
			}
			continue
		}
		out, err := s.API.SendMessageBatch(ctx, in)
		if err != nil {
			if unanswered(err) {
				err = fmt.Errorf("%w: %w", ErrUnanswered, err)
			}
			for i := lo; i < hi; i++ {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("schedule: enqueue a discovery of %q: %w", reqs[i].CatalogID, err)
				}
			}
			continue
		}
		accepted := map[string]bool{}
		for _, e := range out.Successful {
			accepted[aws.ToString(e.Id)] = true
		}
		refused := map[string]string{}
		for _, f := range out.Failed {
			refused[aws.ToString(f.Id)] = aws.ToString(f.Code) + " " + aws.ToString(f.Message)
		}
		for _, e := range in.Entries {
			id := aws.ToString(e.Id)
			i, _ := strconv.Atoi(id)
			switch why, ok := refused[id]; {
			case ok:
				errs[i] = fmt.Errorf("schedule: enqueue a discovery of %q: %w: %s", reqs[i].CatalogID, ErrRefused, why)
			case !accepted[id]:
				errs[i] = fmt.Errorf("schedule: enqueue a discovery of %q: %w: the answer does not list it", reqs[i].CatalogID, ErrRefused)
			}
		}
	}
	return errs
}

// Errors of Enqueue. ErrRefused reports a batch entry SQS refused (or did
// not list); ErrUnanswered a batch whose answer never came, which SQS may
// or may not have taken.
var (
	ErrRefused    = errors.New("the queue refused the message")
	ErrUnanswered = errors.New("the queue's answer never came: the message may be in the queue")
)

// unanswered reports whether err, from a SendMessageBatch, leaves open
// whether SQS took the batch: it is neither an error SQS answered nor a
// connection that was never made.
func unanswered(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}
