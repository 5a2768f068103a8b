package runner

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcpfn/mcpfn/shared/wire"
)

// Outcome is how a work item ended; it prints as the word logs carry.
type Outcome int

// Outcomes.
const (
	Succeeded        Outcome = iota // result returned, or record done
	Failed                          // direct invocation answered with a wire error
	TaskSucceeded                   // SendTaskSuccess accepted
	TaskFailed                      // SendTaskFailure accepted
	DeadLettered                    // permanent failure moved to the DLQ
	Requeued                        // reported as a batch item failure
	NotStarted                      // no useful budget left; back to the queue
	ReportFailed                    // SendTask* failed; back to the queue
	DeadLetterFailed                // the DLQ send failed; back to the queue
	TaskClosed                      // the task already had its outcome or was gone; done
)

var outcomeWords = [...]string{
	Succeeded:        "succeeded",
	Failed:           "failed",
	TaskSucceeded:    "task_succeeded",
	TaskFailed:       "task_failed",
	DeadLettered:     "dead_lettered",
	Requeued:         "requeued",
	NotStarted:       "not_started",
	ReportFailed:     "report_failed",
	DeadLetterFailed: "dead_letter_failed",
	TaskClosed:       "task_closed",
}

func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeWords) {
		return "unknown"
	}
	return outcomeWords[o]
}

// summarize writes the item's summary line and its metrics.
func (r *Runner) summarize(it *Item, start time.Time, o Outcome, err error) {
	elapsed := r.cfg.Now().Sub(start)
	it.mu.Lock()
	attrs := []slog.Attr{
		slog.String("function", r.cfg.Function),
		slog.Bool("cold_start", it.coldStart),
		slog.String("request_id", it.RequestID),
		slog.String("function_request_id", it.RequestID),
		slog.String("work_item", it.ID),
		slog.String("source", it.Source.String()),
		slog.Bool("task_token", it.TaskToken != ""),
		slog.String("server", it.server),
		slog.String("protocol_version", it.protocol),
		slog.String("outcome", o.String()),
		slog.String("error_type", string(wire.TypeOf(err))),
		slog.Int("requests", it.requests),
		slog.Int64("response_bytes", it.bytes),
		slog.Int64("duration_ms", elapsed.Milliseconds()),
	}
	if it.traceID != "" {
		attrs = append(attrs, slog.String("xray_trace_id", it.traceID))
	}
	attrs = append(attrs, it.attrs...)
	bytes, requests := it.bytes, it.requests
	it.mu.Unlock()
	attrs = append(attrs, r.endSpan(it, o, err, requests, bytes)...)
	level := slog.LevelInfo
	if err != nil {
		attrs = append(attrs, slog.String("error", it.Scrub(err.Error())))
		level = slog.LevelWarn
		if wire.TypeOf(err) == wire.Internal {
			level = slog.LevelError
		}
	}
	if o == TaskClosed {
		level = max(level, slog.LevelWarn)
	}
	r.cfg.Logger.LogAttrs(context.Background(), level, "work item", attrs...)
	r.metrics.emit(r.cfg.Now(), o, wire.TypeOf(err), elapsed, bytes)
}

// Namespace is the CloudWatch namespace of the metrics.
const Namespace = "mcpfn"

// Metric names of the runner's lines: per work item WorkItems, NotStarted,
// Duration and ResponseBytes by Function, Failures by Function and
// ErrorType; ColdStart by Function at an instance's first invocation.
const (
	MetricWorkItems     = "WorkItems"
	MetricNotStarted    = "NotStarted"
	MetricDuration      = "Duration"
	MetricResponseBytes = "ResponseBytes"
	MetricFailures      = "Failures"
	MetricColdStart     = "ColdStart"
)

// metrics writes one CloudWatch Embedded Metric Format line per work item:
// WorkItems, Duration and ResponseBytes by Function; NotStarted by Function;
// Failures by Function and wire.ErrorType.
type metrics struct {
	mu       sync.Mutex
	w        io.Writer
	function string
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

func (m *metrics) emit(now time.Time, o Outcome, t wire.ErrorType, d time.Duration, bytes int64) {
	doc := map[string]any{
		"Function":          m.function,
		"Outcome":           o.String(),
		MetricWorkItems:     1,
		MetricNotStarted:    0,
		MetricDuration:      float64(d.Microseconds()) / 1000,
		MetricResponseBytes: bytes,
	}
	meta := emfMeta{
		Timestamp: now.UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace:  Namespace,
			Dimensions: [][]string{{"Function"}},
			Metrics: []emfMetric{
				{MetricWorkItems, "Count"}, {MetricNotStarted, "Count"},
				{MetricDuration, "Milliseconds"}, {MetricResponseBytes, "Bytes"},
			},
		}},
	}
	if o == NotStarted {
		doc[MetricNotStarted] = 1
	}
	if t != "" {
		doc["ErrorType"] = string(t)
		doc[MetricFailures] = 1
		meta.CloudWatchMetrics = append(meta.CloudWatchMetrics, emfDirective{
			Namespace:  Namespace,
			Dimensions: [][]string{{"Function", "ErrorType"}},
			Metrics:    []emfMetric{{MetricFailures, "Count"}},
		})
	}
	doc["_aws"] = meta
	line, err := json.Marshal(doc)
	if err != nil {
		return // every value above marshals
	}
	line = append(line, '\n')
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(line)
}

// EmitCounts writes one CloudWatch Embedded Metric Format line to w: each
// of counts as a Count metric in Namespace by Function, timestamped now.
// Names are written in sorted order. A nil w or no counts writes nothing.
func EmitCounts(w io.Writer, function string, now time.Time, counts map[string]int) {
	if w == nil || len(counts) == 0 {
		return
	}
	doc := map[string]any{"Function": function}
	var ms []emfMetric
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		doc[name] = counts[name]
		ms = append(ms, emfMetric{name, "Count"})
	}
	doc["_aws"] = emfMeta{
		Timestamp:         now.UnixMilli(),
		CloudWatchMetrics: []emfDirective{{Namespace: Namespace, Dimensions: [][]string{{"Function"}}, Metrics: ms}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return // every value above marshals
	}
	_, _ = w.Write(append(line, '\n'))
}
