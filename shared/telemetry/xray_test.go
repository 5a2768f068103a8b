package telemetry_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpfn/mcpfn/shared/telemetry"
)

// TestXRayExportIsSigned: xray mode sends the spans over OTLP/HTTP to the
// endpoint (here an in-test receiver standing in for XRayEndpoint), each
// request SigV4-signed for service xray in the configured region with the
// configured credentials; the receiver re-signs what it got and finds the
// same signature, so the body arrived as signed.
func TestXRayExportIsSigned(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDXRAYTEST", "xray-test-secret", "")
	var mu sync.Mutex
	var auths, names []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &in); err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		auths = append(auths, r.Header.Get("Authorization"))
		if got, want := r.Header.Get("Authorization"), resign(t, r, body, creds); got != want {
			t.Errorf("Authorization %q, re-signed %q", got, want)
		}
		for _, rs := range in.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					names = append(names, sp.Name)
				}
			}
		}
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces")

	tr, err := telemetry.Start(t.Context(), telemetry.XRay, "call", aws.Config{Region: "eu-west-1", Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(t.Context()) }()
	_, span := tr.Provider.Tracer("test").Start(t.Context(), "work item")
	span.End()
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) != 1 || names[0] != "work item" {
		t.Errorf("received spans %v, want [work item]", names)
	}
	for _, a := range auths {
		if !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKIDXRAYTEST/") || !strings.Contains(a, "/eu-west-1/xray/aws4_request") {
			t.Errorf("Authorization %q: want SigV4 for xray in eu-west-1", a)
		}
	}
}

// resign signs a copy of r (its method, URL, body and the headers it
// signed) at its X-Amz-Date and returns the Authorization that gives.
func resign(t *testing.T, r *http.Request, body []byte, creds aws.CredentialsProvider) string {
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date"
	}
	auth := r.Header.Get("Authorization")
	_, signed, _ := strings.Cut(auth, "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	cp, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" {
			cp.Header.Set(h, r.Header.Get(h))
		}
	}
	cp.ContentLength = int64(len(body))
	c, _ := creds.Retrieve(t.Context())
	sum := sha256Hex(body)
	if err := v4.NewSigner().SignHTTP(t.Context(), c, cp, sum, "xray", "eu-west-1", at); err != nil {
		return err.Error()
	}
	return cp.Header.Get("Authorization")
}

// TestXRayNeedsARegion: xray mode without a region is refused at start.
func TestXRayNeedsARegion(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("A", "B", "")
	if _, err := telemetry.Start(t.Context(), telemetry.XRay, "call", aws.Config{Credentials: creds}); !errors.Is(err, telemetry.ErrNoRegion) {
		t.Errorf("Start without a region = %v, want ErrNoRegion", err)
	}
	if got, want := telemetry.XRayEndpoint("eu-west-1"), "https://xray.eu-west-1.amazonaws.com/v1/traces"; got != want {
		t.Errorf("XRayEndpoint = %q, want %q", got, want)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
