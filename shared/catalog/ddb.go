package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/mcpfn/mcpfn/shared/awsconf"
)

// getItem reads one item consistently; nil when absent.
func (s *Dynamo) getItem(ctx context.Context, id, sk string) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            itemKey(id, sk),
		ConsistentRead: aws.Bool(true),
	}, withinDeadline(ctx))
	if err != nil {
		return nil, failed(ctx, "get "+strconv.Quote(id)+" "+sk, err)
	}
	return out.Item, nil
}

// query calls fn for every item under partition key pk, in sort-key
// order, reading consistently; keysOnly projects the keys.
func (s *Dynamo) query(ctx context.Context, pk string, keysOnly bool, fn func(map[string]types.AttributeValue) error) error {
	var attrs []string
	if keysOnly {
		attrs = []string{PartitionKey, SortKey}
	}
	return s.queryAttrs(ctx, pk, attrs, fn)
}

// queryAttrs is query projecting attrs; nil is every attribute.
func (s *Dynamo) queryAttrs(ctx context.Context, pk string, attrs []string, fn func(map[string]types.AttributeValue) error) error {
	b := expression.NewBuilder().WithKeyCondition(expression.Key(PartitionKey).Equal(str(pk)))
	if attrs != nil {
		proj := expression.NamesList(name(attrs[0]))
		for _, a := range attrs[1:] {
			proj = proj.AddNames(name(a))
		}
		b = b.WithProjection(proj)
	}
	return s.runQuery(ctx, b, fn)
}

// queryPrefix calls fn for every item under pk whose sort key starts with
// prefix.
func (s *Dynamo) queryPrefix(ctx context.Context, pk, prefix string, fn func(map[string]types.AttributeValue) error) error {
	key := expression.Key(PartitionKey).Equal(str(pk)).And(expression.Key(SortKey).BeginsWith(prefix))
	return s.runQuery(ctx, expression.NewBuilder().WithKeyCondition(key), fn)
}

// runQuery runs the query b builds, consistently, page by page.
func (s *Dynamo) runQuery(ctx context.Context, b expression.Builder, fn func(map[string]types.AttributeValue) error) error {
	e, err := b.Build()
	if err != nil {
		return fmt.Errorf("catalog: query: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    e.KeyCondition(),
		ProjectionExpression:      e.Projection(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}
	for {
		out, err := s.api.Query(ctx, in, withinDeadline(ctx))
		if err != nil {
			return failed(ctx, "query "+*in.KeyConditionExpression, err)
		}
		for _, item := range out.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// MaxBatchItems is DynamoDB's limit on requests in one BatchWriteItem.
const MaxBatchItems = 25

// workers is how many requests one call has in flight at a time.
const workers = 4

// retryables classifies errors as the SDK's standard retryer does:
// throttling codes, 5xx answers and dropped or refused connections.
var retryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// withinDeadline is the option every request takes: the client's retryer
// sleeps no backoff that would end past ctx's deadline.
func withinDeadline(ctx context.Context) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		if d, ok := ctx.Deadline(); ok && o.Retryer != nil {
			o.Retryer = awsconf.WithinDeadline(o.Retryer, d)
		}
	}
}

// failed is the error of request op that failed with err: it wraps
// ErrUnavailable when ctx ended or the client's retryer gave up on an
// error it retries (its attempts spent, or a backoff past the deadline),
// and is permanent otherwise.
func failed(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || retryables.IsErrorRetryable(err) == aws.TrueTernary {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("catalog: %s: %w", op, err)
}

// pause sleeps d, the backoff before another round of unprocessed items.
// A backoff that would end past ctx's deadline is not slept: pause fails
// at once.
func pause(ctx context.Context, d time.Duration) error {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return fmt.Errorf("backoff of %s ends past the deadline: %w", d, context.DeadlineExceeded)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// batchWrite sends reqs in batches of at most MaxBatchItems with unique
// keys, a few at a time, retrying unprocessed items until ctx ends.
func (s *Dynamo) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	bs := batches(reqs)
	return parallel(ctx, len(bs), func(ctx context.Context, i int) error {
		return s.writeBatch(ctx, bs[i])
	})
}

// putItems puts item(i) for 0 ≤ i < n, whose keys are distinct, in
// batches of MaxBatchItems built as they are sent, a few at a time,
// retrying unprocessed items until ctx ends.
func (s *Dynamo) putItems(ctx context.Context, n int, item func(i int) map[string]types.AttributeValue) error {
	return parallel(ctx, (n+MaxBatchItems-1)/MaxBatchItems, func(ctx context.Context, b int) error {
		lo, hi := b*MaxBatchItems, min(n, (b+1)*MaxBatchItems)
		reqs := make([]types.WriteRequest, 0, hi-lo)
		for i := lo; i < hi; i++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item(i)}})
		}
		return s.writeBatch(ctx, reqs)
	})
}

// parallel calls fn for 0 ≤ i < n, workers at a time (errgroup). The
// first error cancels the calls not yet made and is returned; a ctx that
// ends first wraps ErrUnavailable.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// writeBatch writes b, sending what DynamoDB leaves unprocessed again
// after a backoff (which no SDK retryer sees) until ctx ends.
func (s *Dynamo) writeBatch(ctx context.Context, b []types.WriteRequest) error {
	for round := 0; ; round++ {
		out, err := s.api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{s.table: b},
		}, withinDeadline(ctx))
		if err != nil {
			return failed(ctx, "write items", err)
		}
		b = out.UnprocessedItems[s.table]
		if len(b) == 0 {
			return nil
		}
		if err := pause(ctx, s.backoff.Delay(round)); err != nil {
			return fmt.Errorf("%w: write items: %d unprocessed: %w", ErrUnavailable, len(b), err)
		}
	}
}

// batches splits reqs, in order, into batches DynamoDB accepts: at most
// MaxBatchItems each, no key twice in one batch (a repeated key starts a new
// batch, so later requests still win).
func batches(reqs []types.WriteRequest) [][]types.WriteRequest {
	var (
		out  [][]types.WriteRequest
		cur  []types.WriteRequest
		keys = map[string]bool{}
	)
	for _, r := range reqs {
		k := requestKey(r)
		if len(cur) == MaxBatchItems || keys[k] {
			out = append(out, cur)
			cur = nil
			clear(keys)
		}
		cur = append(cur, r)
		keys[k] = true
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// requestKey is the primary key a write request addresses.
func requestKey(r types.WriteRequest) string {
	var item map[string]types.AttributeValue
	switch {
	case r.PutRequest != nil:
		item = r.PutRequest.Item
	case r.DeleteRequest != nil:
		item = r.DeleteRequest.Key
	}
	return stringAttr(item, PartitionKey) + "\x00" + stringAttr(item, SortKey)
}
