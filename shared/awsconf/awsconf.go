// Package awsconf loads the AWS configuration that the functions and the
// command-line tools build their clients from, with one retry policy:
// the SDK's standard retryer, configured once here.
package awsconf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
)

// The retry policy of every client Load configures.
const (
	MaxAttempts = 10                    // attempts per request, the first included
	BackoffMin  = 20 * time.Millisecond // the first backoff's upper bound
	BackoffMax  = time.Second           // no backoff is longer
)

// Load is config.LoadDefaultConfig with NewRetryer(MaxAttempts,
// Backoff{BackoffMin, BackoffMax}) as the retryer of every client built
// from the result; optFns follow and may override it.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := append([]func(*config.LoadOptions) error{config.WithRetryer(func() aws.Retryer {
		return NewRetryer(MaxAttempts, Backoff{Min: BackoffMin, Max: BackoffMax})
	})}, optFns...)
	return config.LoadDefaultConfig(ctx, opts...)
}

// NewRetryer returns the SDK's standard retryer (retry.NewStandard: its
// retryable errors are throttling codes, 5xx answers and dropped or refused
// connections) making at most attempts attempts (at least 1), sleeping b
// between them, with no client-side retry quota: every request is bounded
// by its attempts and its context instead.
func NewRetryer(attempts int, b Backoff) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = max(attempts, 1)
		o.MaxBackoff = b.Max
		o.Backoff = b
		o.RateLimiter = ratelimit.None
	})
}

// Backoff is a jittered exponential backoff: before retry n (from 1), a
// random time between half and all of min(Max, Min·2^(n-1)). It is a
// retry.BackoffDelayer.
type Backoff struct {
	Min, Max time.Duration
}

var _ retry.BackoffDelayer = Backoff{}

// BackoffDelay is the backoff before retry attempt (from 1); err is
// ignored.
func (b Backoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	return b.Delay(attempt - 1), nil
}

// Delay is the backoff after n failures beyond the first (from 0).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Max
	if n < 30 && b.Min<<max(n, 0) < d {
		d = b.Min << max(n, 0)
	}
	if d > 1 {
		d = d/2 + rand.N(d/2)
	}
	return d
}

// WithinDeadline wraps r so that a backoff that would end past deadline is
// not slept: the request fails at once with its last error and
// context.DeadlineExceeded. The SDK's backoff sees no context, so a caller
// with a deadline wraps the client's retryer per request (an APIOption).
func WithinDeadline(r aws.Retryer, deadline time.Time) aws.Retryer {
	return withinDeadline{RetryerV2: asV2(r), deadline: deadline}
}

type withinDeadline struct {
	aws.RetryerV2
	deadline time.Time
}

func (w withinDeadline) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := w.RetryerV2.RetryDelay(attempt, err)
	if derr == nil && time.Until(w.deadline) < d {
		return 0, fmt.Errorf("%w; its backoff of %s ends past the deadline: %w", err, d, context.DeadlineExceeded)
	}
	return d, derr
}

// asV2 is r as an aws.RetryerV2, its initial token standing for the
// attempt token if it has no GetAttemptToken.
func asV2(r aws.Retryer) aws.RetryerV2 {
	if v2, ok := r.(aws.RetryerV2); ok {
		return v2
	}
	return v1{r}
}

type v1 struct{ aws.Retryer }

func (v v1) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	return v.GetInitialToken(), nil
}
