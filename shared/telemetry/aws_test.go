package telemetry_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// TestInstrumentAWS: an SDK call under a recording span is its CLIENT
// child named Service.Operation, with no request parameter in it; a call
// without one, or with tracing off, starts no span.
func TestInstrumentAWS(t *testing.T) {
	const secretID = "mcpfn/vault-canary"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = w.Write([]byte(`{"Name":"n","SecretString":"s3cret-canary"}`))
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tr := telemetry.NewTracing(rec, "call")
	client := func(tr *telemetry.Tracing) *secretsmanager.Client {
		cfg := aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
			Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
		tr.InstrumentAWS(&cfg)
		return secretsmanager.NewFromConfig(cfg)
	}
	get := func(c *secretsmanager.Client, traced bool) {
		ctx := t.Context()
		var parent trace.Span
		if traced {
			ctx, parent = tr.Provider.Tracer("test").Start(ctx, "item")
		}
		if _, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID)}); err != nil {
			t.Fatal(err)
		}
		if parent != nil {
			parent.End()
		}
	}

	off, _ := telemetry.Start(t.Context(), telemetry.Off, "call", aws.Config{})
	get(client(off), true)
	get(client(tr), false)
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("untraced calls ended %d spans (the parent only), want 1", n)
	}
	get(client(tr), true)
	ended := rec.Ended()
	if len(ended) != 3 {
		t.Fatalf("ended %d spans, want 3", len(ended))
	}
	sm, item := ended[1], ended[2]
	if sm.Name() != "Secrets Manager.GetSecretValue" || sm.SpanKind() != trace.SpanKindClient || sm.Parent().SpanID() != item.SpanContext().SpanID() {
		t.Errorf("span %q kind %v parent %v, want Secrets Manager.GetSecretValue, a CLIENT child of %v", sm.Name(), sm.SpanKind(), sm.Parent().SpanID(), item.SpanContext().SpanID())
	}
	for _, kv := range sm.Attributes() {
		if v := kv.Value.String(); strings.Contains(v, "canary") {
			t.Errorf("attribute %s = %q holds the request or answer", kv.Key, v)
		}
	}
}
