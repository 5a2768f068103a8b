package main

// This file gives a local run its traces: a loopback OTLP/HTTP receiver the
// functions export to (MCPFN_TRACES=otlp), and each invocation's spans
// printed as a waterfall: one line per span, indented under its parent,
// its duration, a bar placed on the trace's time line, and errors marked.

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxExport bounds one export request the receiver reads; maxSpans the
// spans it keeps until take (make up never takes them).
const (
	maxExport = 16 << 20
	maxSpans  = 10000
)

// traceReceiver is an OTLP/HTTP (protobuf) trace receiver on loopback.
type traceReceiver struct {
	url string
	srv *http.Server

	mu    sync.Mutex
	spans []*tracepb.Span
}

// startTraceReceiver listens on a free loopback port.
func startTraceReceiver() (*traceReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("trace receiver: %w", err)
	}
	r := &traceReceiver{url: "http://" + ln.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// env is what makes a function export its spans to r.
func (r *traceReceiver) env() []string {
	return []string{"MCPFN_TRACES=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + r.url}
}

func (r *traceReceiver) close() error { return r.srv.Close() }

func (r *traceReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxExport))
	var in collectortrace.ExportTraceServiceRequest
	if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &in) != nil {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range in.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	if n := len(r.spans) - maxSpans; n > 0 {
		r.spans = slices.Delete(r.spans, 0, n)
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// take returns and forgets the spans received so far; nil on a nil r.
func (r *traceReceiver) take() []*tracepb.Span {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spans
	r.spans = nil
	return s
}

// barWidth is the width of the waterfall's time line in characters.
const barWidth = 40

// writeWaterfall prints spans as one waterfall per trace, the traces in
// the order they started.
func writeWaterfall(w io.Writer, spans []*tracepb.Span) {
	byTrace := map[string][]*tracepb.Span{}
	var order []string
	for _, s := range spans {
		id := hex.EncodeToString(s.TraceId)
		if byTrace[id] == nil {
			order = append(order, id)
		}
		byTrace[id] = append(byTrace[id], s)
	}
	for _, id := range order {
		writeTrace(w, id, byTrace[id])
	}
}

// writeTrace prints one trace: its roots (spans whose parent it does not
// hold) and their children, each sorted by start time.
func writeTrace(w io.Writer, traceID string, spans []*tracepb.Span) {
	slices.SortFunc(spans, func(a, b *tracepb.Span) int { return cmp.Compare(a.StartTimeUnixNano, b.StartTimeUnixNano) })
	ids := map[string]bool{}
	children := map[string][]*tracepb.Span{}
	begin, end := spans[0].StartTimeUnixNano, spans[0].EndTimeUnixNano
	for _, s := range spans {
		ids[hex.EncodeToString(s.SpanId)] = true
		begin, end = min(begin, s.StartTimeUnixNano), max(end, s.EndTimeUnixNano)
	}
	var roots []*tracepb.Span
	for _, s := range spans {
		if p := hex.EncodeToString(s.ParentSpanId); ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	total := max(end-begin, 1)
	fmt.Fprintf(w, "  trace %s (%s)\n", traceID, millis(end-begin))
	var walk func(s *tracepb.Span, depth int)
	walk = func(s *tracepb.Span, depth int) {
		from := int((s.StartTimeUnixNano - begin) * barWidth / total)
		n := max(int((s.EndTimeUnixNano-s.StartTimeUnixNano)*barWidth/total), 1)
		from = min(from, barWidth-1)
		n = min(n, barWidth-from)
		bar := strings.Repeat(" ", from) + strings.Repeat("█", n) + strings.Repeat(" ", barWidth-from-n)
		name := strings.Repeat("  ", depth) + s.Name
		if len(name) > 44 {
			name = name[:43] + "…"
		}
		fmt.Fprintf(w, "    %-44s %9s |%s|%s\n", name, millis(s.EndTimeUnixNano-s.StartTimeUnixNano), bar, errorMark(s))
		for _, c := range children[hex.EncodeToString(s.SpanId)] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
}

// millis formats nanoseconds as milliseconds.
func millis(ns uint64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) }

// errorMark is " ✗ " and the span's error.type (else its status message)
// for a span whose status is an error, else "".
func errorMark(s *tracepb.Span) string {
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		return ""
	}
	for _, kv := range s.Attributes {
		if kv.Key == "error.type" {
			return " ✗ " + kv.Value.GetStringValue()
		}
	}
	return " ✗ " + s.Status.GetMessage()
}
