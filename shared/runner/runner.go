package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/telemetry"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Processor does one work item. It returns the result (anything that
// marshals to JSON) or an error whose wire type wire.TypeOf reports. It bounds
// its MCP work with it.OperationContext(ctx).
type Processor interface {
	Process(ctx context.Context, it *Item) (any, error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, it *Item) (any, error)

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, it *Item) (any, error) { return f(ctx, it) }

// QueueAPI is the SQS operation dead-lettering needs.
type QueueAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// TaskAPI is the Step Functions operations reporting to a task token needs.
type TaskAPI interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
}

var (
	_ QueueAPI = (*sqs.Client)(nil)
	_ TaskAPI  = (*sfn.Client)(nil)
)

// ItemBytes is the most one work item holds: what its connection's answers
// may cost decoded (mcp.MaxDecodedCost) beside their bytes on the wire
// (mcp.MaxResponseBytes), 36 MiB. It is the share of Config.MemoryBudget an
// item takes.
const ItemBytes = mcp.MaxDecodedCost + mcp.MaxResponseBytes

// Defaults for a zero Config.
const (
	DefaultConcurrency      = 10
	DefaultReserve          = 5 * time.Second
	DefaultOperationTimeout = 2 * time.Minute
	DefaultMinBudget        = time.Second
	DefaultItemBytes        = ItemBytes
)

// Size limits in bytes of what the runner sends on (text.Truncate cuts).
const (
	maxPublicMessage = 2048 // a wire error's message
	maxErrorAttr     = 1024 // a dead-lettered message's error attribute
	maxTaskCause     = 32768
)

// Config configures a Runner. Zero fields take the defaults above; a nil
// Logger is slog.Default(), nil Metrics is os.Stdout, nil Now is time.Now.
//   - Function names the function in logs and metrics ("discover", "call").
//   - A work item's budget is min(OperationTimeout, deadline − now −
//     Reserve) when it starts; below MinBudget it is not started.
//   - Concurrency bounds the work items running at once, across every
//     Handle call; MemoryBudget (bytes, 0: none) bounds them further to
//     MemoryBudget/ItemBytes (at least one). An item waits for its slot.
//   - CPUSlots (0: none) bounds the CPU-heavy parts of items that run at
//     once (Item.CPU); startup sets it from the function's CPU share.
//   - The reserve bounds what follows an item's operation: the processor's
//     context ends 3/5 of it after the operation's deadline (the store
//     write and the ledger have that and what the operation left unused);
//     reporting gets the rest but a margin kept for answering.
//   - DLQURL, when set, receives permanently failed records without a task
//     token through Queue; when empty they are reported as batch item
//     failures so the queue's redrive policy moves them.
//   - Tasks reports outcomes to task tokens.
//   - Tracing (nil: off) gives each item a span, flushed before its
//     summary line is written (see span.go).
type Config struct {
	Function         string
	Concurrency      int
	MemoryBudget     int64
	ItemBytes        int64
	CPUSlots         int
	Reserve          time.Duration
	OperationTimeout time.Duration
	MinBudget        time.Duration
	DLQURL           string
	Queue            QueueAPI
	Tasks            TaskAPI
	Tracing          *telemetry.Tracing
	Logger           *slog.Logger
	Metrics          io.Writer
	Now              func() time.Time
}

// Runner turns one Lambda invocation into work items and reports each one's
// outcome. Handle is safe for concurrent use.
type Runner struct {
	cfg     Config
	proc    Processor
	metrics *metrics
	slots   chan struct{} // one per work item allowed in flight
	cpu     *cpuGate      // nil without Config.CPUSlots
	shares  reserveShares
	warm    atomic.Bool // set by the first invocation (begin)
}

// NewRunner checks cfg, applies its defaults, and returns a Runner calling p.
func NewRunner(cfg Config, p Processor) (*Runner, error) {
	if cfg.Function == "" {
		return nil, errors.New("runner: Config.Function is empty")
	}
	if p == nil {
		return nil, errors.New("runner: nil Processor")
	}
	if cfg.Concurrency < 0 || cfg.Reserve < 0 || cfg.OperationTimeout < 0 || cfg.MinBudget < 0 || cfg.MemoryBudget < 0 || cfg.ItemBytes < 0 || cfg.CPUSlots < 0 {
		return nil, errors.New("runner: negative Concurrency, MemoryBudget, ItemBytes, CPUSlots, Reserve, OperationTimeout or MinBudget")
	}
	if cfg.DLQURL != "" && cfg.Queue == nil {
		return nil, errors.New("runner: DLQURL set without a Queue client")
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.ItemBytes == 0 {
		cfg.ItemBytes = DefaultItemBytes
	}
	if cfg.Reserve == 0 {
		cfg.Reserve = DefaultReserve
	}
	if cfg.OperationTimeout == 0 {
		cfg.OperationTimeout = DefaultOperationTimeout
	}
	if cfg.MinBudget == 0 {
		cfg.MinBudget = DefaultMinBudget
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = os.Stdout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runner{
		cfg:     cfg,
		proc:    p,
		metrics: &metrics{w: cfg.Metrics, function: cfg.Function},
		slots:   make(chan struct{}, SlotCount(cfg.Concurrency, cfg.MemoryBudget, cfg.ItemBytes)),
		cpu:     newCPUGate(cfg.CPUSlots),
		shares:  splitReserve(cfg.Reserve),
	}, nil
}

// SlotCount is how many items may run at once: concurrency, bounded by
// how many item shares the memory budget holds, and at least one.
func SlotCount(concurrency int, budget, share int64) int {
	if budget <= 0 {
		return concurrency
	}
	return int(max(1, min(int64(concurrency), budget/share)))
}

// reserveShares divides the reserve: the processor's work after its
// operation (store, ledger), then reporting (task token, DLQ), and a margin
// left for answering the invocation.
type reserveShares struct{ after, report, margin time.Duration }

func splitReserve(reserve time.Duration) reserveShares {
	margin := min(reserve/10, 500*time.Millisecond)
	after := (reserve - margin) * 3 / 5
	return reserveShares{after: after, report: reserve - margin - after, margin: margin}
}

// Invoke is the Lambda handler (lambda.Handler): it takes the payload as
// bytes, so that a body the runtime could not decode still gets an
// invalid_request_error, and answers Handle's result as JSON.
func (r *Runner) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	v, err := r.Handle(ctx, payload)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, messages.InvokeResponse_Error{Type: string(wire.Internal), Message: "internal error: the result does not marshal"}
	}
	return buf.Bytes(), nil
}

// Handle is the Lambda handler. A payload with a top-level "Records" key is
// an SQS batch and gets an events.SQSEventResponse; anything else is one
// direct request, answered with the processor's result or a
// messages.InvokeResponse_Error whose Type is the wire type. A task_token in
// a request sends its outcome to Step Functions instead.
func (r *Runner) Handle(ctx context.Context, payload json.RawMessage) (any, error) {
	inv := r.begin(ctx)
	ev, err := sqsEvent(payload)
	if err != nil {
		it := r.item(inv, inv.requestID, Direct, nil, "")
		r.summarize(it, r.cfg.Now(), Failed, err)
		return nil, r.wireError(it, err)
	}
	if ev != nil {
		return r.batch(ctx, inv, ev), nil
	}
	return r.direct(ctx, inv, payload)
}

// acquire takes a slot, waiting while an item could still get MinBudget
// after it.
func (r *Runner) acquire(ctx context.Context) error {
	select {
	case r.slots <- struct{}{}:
		return nil
	default:
	}
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		wctx, cancel = context.WithDeadline(ctx, d.Add(-r.cfg.Reserve-r.cfg.MinBudget))
	}
	defer cancel()
	select {
	case r.slots <- struct{}{}:
		return nil
	case <-wctx.Done():
		return wire.Errorf(wire.Internal, wctx.Err(), "not started: no slot came free while a budget of %s was left", r.cfg.MinBudget)
	}
}

// reportContext bounds reporting an item's outcome by the reserve's report
// share, and by the invocation's deadline less the margin.
func (r *Runner) reportContext(ctx context.Context) (context.Context, context.CancelFunc) {
	end := time.Now().Add(r.shares.report)
	if d, ok := ctx.Deadline(); ok && d.Add(-r.shares.margin).Before(end) {
		end = d.Add(-r.shares.margin)
	}
	return context.WithDeadline(ctx, end)
}

func (r *Runner) direct(ctx context.Context, inv invocation, payload []byte) (any, error) {
	it := r.item(inv, inv.requestID, Direct, payload, "")
	start := r.cfg.Now()
	v, started, err := r.runInSlot(ctx, it)
	switch {
	case !started:
		r.summarize(it, start, NotStarted, err)
		return nil, r.wireError(it, err)
	case it.TaskToken != "" && !wire.MustRequeue(err):
		if rerr := r.report(ctx, it, start, v, err); rerr != nil {
			return nil, r.wireError(it, wire.Errorf(wire.Internal, rerr, "could not report the outcome to Step Functions"))
		}
		if err != nil {
			return nil, nil
		}
		return v, nil
	case err != nil:
		r.summarize(it, start, Failed, err)
		return nil, r.wireError(it, err)
	}
	r.summarize(it, start, Succeeded, nil)
	return v, nil
}

// batch runs the records in order, as slots allow, and returns every
// record that must come back as a batch item failure. A record that gets
// no slot while a useful budget is left is not started.
func (r *Runner) batch(ctx context.Context, inv invocation, ev *events.SQSEvent) events.SQSEventResponse {
	failed := make([]bool, len(ev.Records))
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		it := r.item(inv, rec.MessageId, SQS, []byte(rec.Body), rec.Attributes[AttrTraceHeader])
		it.Queue = rec.EventSourceARN
		if err := r.acquire(ctx); err != nil {
			failed[i] = true
			r.summarize(it, r.cfg.Now(), NotStarted, err)
			continue
		}
		wg.Go(func() {
			defer func() { <-r.slots }()
			failed[i] = !r.record(ctx, it, rec)
		})
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp
}

// runInSlot runs it once a slot is free (see batch).
func (r *Runner) runInSlot(ctx context.Context, it *Item) (any, bool, error) {
	if err := r.acquire(ctx); err != nil {
		return nil, false, err
	}
	defer func() { <-r.slots }()
	return r.run(ctx, it)
}

// record runs one SQS record and reports whether it is done (true) or must
// return to the queue (false).
func (r *Runner) record(ctx context.Context, it *Item, rec events.SQSMessage) bool {
	start := r.cfg.Now()
	v, started, err := r.run(ctx, it)
	switch {
	case !started:
		r.summarize(it, start, NotStarted, err)
		return false
	case wire.MustRequeue(err):
		r.summarize(it, start, Requeued, err)
		return false
	case it.TaskToken != "":
		return r.report(ctx, it, start, v, err) == nil
	case err == nil:
		r.summarize(it, start, Succeeded, nil)
		return true
	case wire.Permanent(err) && r.cfg.DLQURL != "":
		if derr := r.deadLetter(ctx, it, rec, err); derr != nil {
			r.summarize(it, start, DeadLetterFailed, errors.Join(err, derr))
			return false
		}
		r.summarize(it, start, DeadLettered, err)
		return true
	}
	r.summarize(it, start, Requeued, err)
	return false
}

// run gives it its budget and processes it, unless the budget is below
// MinBudget. A panic in the processor is a wire.Internal error.
func (r *Runner) run(ctx context.Context, it *Item) (v any, started bool, err error) {
	now := r.cfg.Now()
	budget := r.cfg.OperationTimeout
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, d.Sub(now)-r.cfg.Reserve)
	}
	if budget < r.cfg.MinBudget || ctx.Err() != nil {
		return nil, false, wire.Errorf(wire.Internal, nil, "not started: a budget of %s is below the minimum %s (reserve %s)",
			max(budget, 0).Round(time.Millisecond), r.cfg.MinBudget, r.cfg.Reserve)
	}
	it.Deadline, it.cpu = now.Add(budget), r.cpu
	if it.badToken != nil {
		return nil, true, it.badToken
	}
	pctx, cancel := context.WithDeadline(ctx, time.Now().Add(budget+r.shares.after))
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			v, started, err = nil, true, wire.Errorf(wire.Internal, fmt.Errorf("panic: %v", p), "internal error")
		}
	}()
	v, err = r.proc.Process(r.observed(it.spanContext(pctx)), it)
	return v, true, err
}
