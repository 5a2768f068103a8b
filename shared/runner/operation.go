package runner

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// MetricOperationDuration is the MCP semantic conventions' client metric:
// each MCP request's duration in seconds, by Function, Method (the
// mcp.method.name) and Outcome (OperationOK or OperationError). The
// server's origin and the error type are properties of the line, never
// dimensions.
const MetricOperationDuration = "mcp.client.operation.duration"

// Operation outcomes, the metric's Outcome dimension.
const (
	OperationOK    = "ok"
	OperationError = "error"
)

// observed returns ctx whose MCP requests are each written as one
// MetricOperationDuration line.
func (r *Runner) observed(ctx context.Context) context.Context {
	if r.metrics.w == nil {
		return ctx
	}
	return mcp.WithOperations(ctx, func(op mcp.Operation) { r.metrics.operation(r.cfg.Now(), op) })
}

// operation writes op as one CloudWatch Embedded Metric Format line.
func (m *metrics) operation(now time.Time, op mcp.Operation) {
	outcome := OperationOK
	if op.ErrorType != "" {
		outcome = OperationError
	}
	doc := map[string]any{
		"Function":              m.function,
		"Method":                op.Method,
		"Outcome":               outcome,
		"Server":                op.Origin,
		MetricOperationDuration: op.Duration.Seconds(),
		"_aws": emfMeta{Timestamp: now.UnixMilli(), CloudWatchMetrics: []emfDirective{{
			Namespace:  Namespace,
			Dimensions: [][]string{{"Function", "Method", "Outcome"}},
			Metrics:    []emfMetric{{MetricOperationDuration, "Seconds"}},
		}}},
	}
	if op.ErrorType != "" {
		doc["ErrorType"] = op.ErrorType
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return // every value above marshals
	}
	line = append(line, '\n')
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(line)
}
