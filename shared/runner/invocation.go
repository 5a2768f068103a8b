package runner

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// EnvTraceID is the variable the Lambda runtime sets to the invocation's
// X-Ray trace header (aws-lambda-go also puts it in the context).
const EnvTraceID = "_X_AMZN_TRACE_ID"

// invocation is what the work items of one Lambda invocation share in
// their summary lines.
type invocation struct {
	requestID string    // the Lambda request id
	coldStart bool      // the instance's first invocation
	header    string    // the X-Ray trace header, or ""
	traceID   string    // the X-Ray trace id, or ""
	deadline  time.Time // the invocation's, or zero
}

// begin returns the invocation ctx carries. The first on r is the
// instance's cold start: it writes the ColdStart metric.
func (r *Runner) begin(ctx context.Context) invocation {
	h := traceHeader(ctx)
	inv := invocation{coldStart: r.warm.CompareAndSwap(false, true), header: h, traceID: traceID(h)}
	inv.deadline, _ = ctx.Deadline()
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.requestID = lc.AwsRequestID
	}
	if inv.coldStart {
		EmitCounts(r.cfg.Metrics, r.cfg.Function, r.cfg.Now(), map[string]int{MetricColdStart: 1})
	}
	return inv
}

// item is a new work item of the invocation, its span started (see
// startSpan): a direct item continues the invocation's trace header, a
// record the header it carries (an empty one: the invocation's).
func (r *Runner) item(inv invocation, id string, src Source, body []byte, header string) *Item {
	it := newItem(id, inv.requestID, src, body)
	it.coldStart, it.traceID, it.flushBy = inv.coldStart, inv.traceID, inv.deadline
	if header == "" {
		header = inv.header
	}
	r.startSpan(it, header)
	return it
}

// traceHeader returns the invocation's X-Ray trace header: the one
// aws-lambda-go puts in ctx, else EnvTraceID's; "" without one.
func traceHeader(ctx context.Context) string {
	h, _ := ctx.Value("x-amzn-trace-id").(string) // aws-lambda-go's key
	if h == "" {
		h = os.Getenv(EnvTraceID)
	}
	return h
}

// traceID returns the X-Ray trace id of header: its Root; the whole
// header when it names no Root; "" without one.
func traceID(h string) string {
	for field := range strings.SplitSeq(h, ";") {
		if root, ok := strings.CutPrefix(strings.TrimSpace(field), "Root="); ok {
			return root
		}
	}
	return strings.TrimSpace(h)
}
