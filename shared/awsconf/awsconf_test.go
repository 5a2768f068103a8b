package awsconf_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/awsconf"
)

func TestBackoffBounds(t *testing.T) {
	b := awsconf.Backoff{Min: 20 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		attempt int
		lo, hi  time.Duration
	}{
		{1, 10 * time.Millisecond, 20 * time.Millisecond},
		{3, 40 * time.Millisecond, 80 * time.Millisecond},
		{6, 320 * time.Millisecond, 640 * time.Millisecond},
		{7, 500 * time.Millisecond, time.Second}, // capped at Max
		{100, 500 * time.Millisecond, time.Second},
	} {
		for range 50 {
			d, err := b.BackoffDelay(tc.attempt, nil)
			if err != nil || d < tc.lo || d > tc.hi {
				t.Fatalf("BackoffDelay(%d) = %s, %v; want within [%s, %s]", tc.attempt, d, err, tc.lo, tc.hi)
			}
		}
	}
}

// throttled answers every DynamoDB request with a ThrottlingException and
// counts them.
func throttled(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}`))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func client(url string, r aws.Retryer) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:      r,
	})
}

// TestRetryerMakesItsAttempts: a throttled request is sent MaxAttempts
// times, then fails with the SDK's MaxAttemptsError around the last error.
func TestRetryerMakesItsAttempts(t *testing.T) {
	s, n := throttled(t)
	c := client(s.URL, awsconf.NewRetryer(awsconf.MaxAttempts, awsconf.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}))
	_, err := c.GetItem(context.Background(), getInput)
	var maxErr *retry.MaxAttemptsError
	if !errors.As(err, &maxErr) {
		t.Fatalf("GetItem on a throttled table: %v, want a MaxAttemptsError", err)
	}
	if got := n.Load(); got != awsconf.MaxAttempts {
		t.Errorf("%d attempts, want %d", got, awsconf.MaxAttempts)
	}
}

// TestWithinDeadlineSleepsNoBackoffPastIt: with a backoff longer than the
// time left, the request fails after one attempt, at once, with its error
// and context.DeadlineExceeded; the SDK's middleware returns RetryDelay's
// error as the request's.
func TestWithinDeadlineSleepsNoBackoffPastIt(t *testing.T) {
	s, n := throttled(t)
	c := client(s.URL, awsconf.NewRetryer(awsconf.MaxAttempts, awsconf.Backoff{Min: time.Hour, Max: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	start := time.Now()
	_, err := c.GetItem(ctx, getInput, func(o *dynamodb.Options) {
		o.Retryer = awsconf.WithinDeadline(o.Retryer, deadline)
	})
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("GetItem: %v (context %v), want DeadlineExceeded before the context ends", err, ctx.Err())
	}
	if !retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err).Bool() {
		t.Errorf("GetItem: %v, want the throttling error kept", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d attempts, want 1", got)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("GetItem returned after %s: it slept the backoff", took)
	}
}

var getInput = &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}
