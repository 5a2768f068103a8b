package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// OursTraced names shared/mcp with traces exported, as the runner does it
// with MCPFN_TRACES=otlp: the item runs under a recording span, which is
// ended and flushed to a loopback OTLP/HTTP receiver after each item.
const OursTraced item.Client = "shared/mcp, traces exported"

// Exporter is a loopback OTLP/HTTP receiver and the tracing that exports
// to it. Stop ends both.
type Exporter struct {
	tracing  *telemetry.Tracing
	srv      *http.Server
	received atomic.Int64 // bytes of exports received
}

// StartExporter starts the receiver (it reads each export and answers an
// empty success) and the functions' own tracing (telemetry.Start, mode
// OTLP) exporting to it.
func StartExporter(ctx context.Context) (*Exporter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	x := &Exporter{}
	x.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		x.received.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go func() { _ = x.srv.Serve(ln) }()
	x.tracing, err = startOTLP(ctx, "http://"+ln.Addr().String()+"/v1/traces")
	if err != nil {
		_ = x.srv.Close()
		return nil, err
	}
	return x, nil
}

// Run runs s through shared/mcp under a work item span, then ends the
// span and flushes the exporter, as the runner does before answering.
func (x *Exporter) Run(ctx context.Context, s item.Spec) error {
	ctx, span := x.tracing.Provider.Tracer("bench").Start(ctx, "call")
	err := item.Run(ctx, item.Ours, s)
	span.End()
	if ferr := x.tracing.Flush(ctx); ferr != nil && err == nil {
		err = fmt.Errorf("trace export: %w", ferr)
	}
	return err
}

// startOTLP is telemetry.Start in OTLP mode with its endpoint variable set
// to endpoint while the exporter reads it, as a function configured with
// MCPFN_TRACES=otlp and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT has it.
func startOTLP(ctx context.Context, endpoint string) (*telemetry.Tracing, error) {
	const env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	old, had := os.LookupEnv(env)
	if err := os.Setenv(env, endpoint); err != nil {
		return nil, err
	}
	defer func() {
		if had {
			_ = os.Setenv(env, old)
		} else {
			_ = os.Unsetenv(env)
		}
	}()
	return telemetry.Start(ctx, telemetry.OTLP, "bench", aws.Config{})
}

// Stop shuts the tracing and the receiver down.
func (x *Exporter) Stop(ctx context.Context) error {
	err := x.tracing.Shutdown(ctx)
	_ = x.srv.Close()
	return err
}
