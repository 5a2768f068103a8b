package runner

import (
	"context"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// EnvTraceID is the variable the Lambda runtime sets to the invocation's
// X-Ray trace header (aws-lambda-go also puts it in the context).
const EnvTraceID = "_X_AMZN_TRACE_ID"

// invocation is what the work items of one Lambda invocation share in
// their summary lines.
type invocation struct {
	requestID string // the Lambda request id
	coldStart bool   // the instance's first invocation
	traceID   string // the X-Ray trace id, or ""
}

// begin returns the invocation ctx carries. The first on r is the
// instance's cold start: it writes the ColdStart metric.
func (r *Runner) begin(ctx context.Context) invocation {
	inv := invocation{coldStart: r.warm.CompareAndSwap(false, true), traceID: traceID(ctx)}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.requestID = lc.AwsRequestID
	}
	if inv.coldStart {
		EmitCounts(r.cfg.Metrics, r.cfg.Function, r.cfg.Now(), map[string]int{"ColdStart": 1})
	}
	return inv
}

// item is a new work item of the invocation.
func (inv invocation) item(id string, src Source, body []byte) *Item {
	it := newItem(id, inv.requestID, src, body)
	it.coldStart, it.traceID = inv.coldStart, inv.traceID
	return it
}

// traceID returns the X-Ray trace id of the invocation: the Root of the
// trace header aws-lambda-go puts in ctx, else of EnvTraceID; the whole
// header when it names no Root; "" without one.
func traceID(ctx context.Context) string {
	h, _ := ctx.Value("x-amzn-trace-id").(string) // aws-lambda-go's key
	if h == "" {
		h = os.Getenv(EnvTraceID)
	}
	for field := range strings.SplitSeq(h, ";") {
		if root, ok := strings.CutPrefix(strings.TrimSpace(field), "Root="); ok {
			return root
		}
	}
	return strings.TrimSpace(h)
}
