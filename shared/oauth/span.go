package oauth

// This file traces each OAuth request as a CLIENT span named "OAuth
// {endpoint}" ("OAuth token endpoint", "OAuth protected-resource metadata",
// ...), a child of the span in the request's context, with the origin only
// (server.address, server.port), the method and the status. A request whose
// context holds no recording span (tracing off) is not traced.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// TracerName names this package's tracer (the instrumentation scope).
const TracerName = "github.com/mcpfn/mcpfn/shared/oauth"

type endpointKey struct{}

// forEndpoint returns ctx naming endpoint for the span of its requests.
func forEndpoint(ctx context.Context, endpoint string) context.Context {
	return context.WithValue(ctx, endpointKey{}, endpoint)
}

// traced is a RoundTripper that spans each request it sends through next.
type traced struct{ next http.RoundTripper }

func (t traced) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	parent := trace.SpanFromContext(req.Context())
	if !parent.IsRecording() {
		return next.RoundTrip(req)
	}
	endpoint, _ := req.Context().Value(endpointKey{}).(string)
	if endpoint == "" {
		endpoint = "request"
	}
	_, span := parent.TracerProvider().Tracer(TracerName).Start(req.Context(), "OAuth "+endpoint,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			semconv.ServerAddress(req.URL.Hostname()),
			semconv.ServerPort(port(req)),
			semconv.HTTPRequestMethodKey.String(req.Method)))
	defer span.End()
	resp, err := next.RoundTrip(req)
	if err != nil {
		kind := "connection_error"
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			kind = "timeout"
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(kind))
		span.SetStatus(codes.Error, kind)
		return resp, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		code := strconv.Itoa(resp.StatusCode)
		span.SetAttributes(semconv.ErrorTypeKey.String(code))
		span.SetStatus(codes.Error, "HTTP "+code)
	}
	return resp, err
}

// port is req's server port, the scheme's default when the URL names none.
func port(req *http.Request) int {
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		return p
	}
	if req.URL.Scheme == "http" {
		return 80
	}
	return 443
}
