package runner

// This file answers for a work item once it ended: the task report, the
// summary line and dead-lettering.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/shared/text"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// report sends the outcome (v or err) to the item's task and writes its
// summary line. It returns nil once Step Functions has the outcome or
// answered that the task is already closed, else why the report failed.
func (r *Runner) report(ctx context.Context, it *Item, start time.Time, v any, err error) error {
	rctx, cancel := r.reportContext(it.spanContext(ctx))
	defer cancel()
	rerr := r.reportTask(rctx, it, v, err)
	switch code := closedTask(rerr); {
	case code != "":
		it.Annotate(slog.String("task_report_error", code))
		r.summarize(it, start, TaskClosed, err)
	case rerr != nil:
		r.summarize(it, start, ReportFailed, errors.Join(err, rerr))
		return rerr
	case err != nil:
		r.summarize(it, start, TaskFailed, err)
	default:
		r.summarize(it, start, TaskSucceeded, nil)
	}
	return nil
}

// closedTask names the Step Functions error when err says the task
// already has its outcome or no longer exists, else returns "".
func closedTask(err error) string {
	var (
		timedOut *sfntypes.TaskTimedOut
		gone     *sfntypes.TaskDoesNotExist
		invalid  *sfntypes.InvalidToken
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &timedOut):
		return "TaskTimedOut"
	case errors.As(err, &gone):
		return "TaskDoesNotExist"
	case errors.As(err, &invalid):
		return "InvalidToken"
	}
	return ""
}

func (r *Runner) reportTask(ctx context.Context, it *Item, v any, err error) error {
	if r.cfg.Tasks == nil {
		return errors.New("no Step Functions client configured")
	}
	if err == nil {
		out, merr := json.Marshal(v)
		if merr == nil {
			_, serr := r.cfg.Tasks.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(it.TaskToken), Output: aws.String(string(out))})
			return serr
		}
		err = wire.Errorf(wire.Internal, merr, "internal error: the result does not marshal")
	}
	_, serr := r.cfg.Tasks.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(it.TaskToken),
		Error:     aws.String(string(wire.TypeOf(err))),
		Cause:     aws.String(text.Truncate(r.publicMessage(it, err), maxTaskCause)),
	})
	return serr
}

// DeadLetterError is a failure whose dead-letter message carries more
// than the record: Attributes become message attributes named
// "mcpfn.<name>" (values as given, unscrubbed: the processor scrubs them),
// and Body, when set, replaces the record's body. It is dead-lettered
// only when Err is permanent (wire.Permanent).
type DeadLetterError struct {
	Err        error
	Attributes map[string]string
	Body       string
}

func (e *DeadLetterError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *DeadLetterError) Unwrap() error { return e.Err }

func (r *Runner) deadLetter(ctx context.Context, it *Item, rec events.SQSMessage, err error) error {
	in := &sqs.SendMessageInput{
		QueueUrl:    aws.String(r.cfg.DLQURL),
		MessageBody: aws.String(rec.Body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"mcpfn.error_type":        stringAttr(string(wire.TypeOf(err))),
			"mcpfn.error_message":     stringAttr(text.Truncate(r.publicMessage(it, err), maxErrorAttr)),
			"mcpfn.source_message_id": stringAttr(rec.MessageId),
		},
	}
	if dl, ok := errors.AsType[*DeadLetterError](err); ok {
		for name, v := range dl.Attributes {
			in.MessageAttributes["mcpfn."+name] = stringAttr(v)
		}
		if dl.Body != "" {
			in.MessageBody = aws.String(dl.Body)
		}
	}
	if strings.HasSuffix(r.cfg.DLQURL, ".fifo") {
		group := rec.Attributes["MessageGroupId"]
		if group == "" {
			group = "mcpfn"
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(rec.MessageId)
	}
	rctx, cancel := r.reportContext(it.spanContext(ctx))
	defer cancel()
	_, serr := r.cfg.Queue.SendMessage(rctx, in)
	return serr
}

func stringAttr(s string) sqstypes.MessageAttributeValue {
	if s == "" {
		s = "-" // SQS refuses empty attribute values
	}
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
}

// wireError is what a direct invocation returns for err: aws-lambda-go
// reports a returned messages.InvokeResponse_Error value as given.
func (r *Runner) wireError(it *Item, err error) error {
	return messages.InvokeResponse_Error{Type: string(wire.TypeOf(err)), Message: r.publicMessage(it, err)}
}

// publicMessage is what a caller may see about err: see Item.PublicMessage.
func (r *Runner) publicMessage(it *Item, err error) string { return it.PublicMessage(err) }
