package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// TestTraceXRay: with MCPFN_TRACES=xray, the real bootstrap under the RIE
// exports its spans over OTLP/HTTP to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT
// names (here an in-test receiver standing in for the regional X-Ray
// endpoint), every request SigV4-signed for service xray in the function's
// region with its credentials (the receiver re-signs what it got and finds
// the same signature); an SQS record's spans arrive in the trace of its
// AWSTraceHeader.
func TestTraceXRay(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	rcv := startCheckingReceiver(t, func(req *http.Request, body []byte) {
		auth := req.Header.Get("Authorization")
		mu.Lock()
		auths = append(auths, auth)
		mu.Unlock()
		if want := resignXRay(req, body); auth != want {
			t.Errorf("Authorization %q, re-signed %q", auth, want)
		}
	})
	srv := mcptest.NewServer(t, mcptest.Options{})
	s := newStack(t, stackOptions{allow: []string{allowOnly(t, srv.URL)}, env: []string{
		"MCPFN_TRACES=xray", "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL,
	}})
	ev := map[string]any{"Records": []map[string]any{{
		"messageId": "msg-0", "receiptHandle": "r", "eventSource": "aws:sqs",
		"body":           string(mustJSON(t, map[string]any{"catalog_id": "xray", "server_url": srv.URL})),
		"eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:e2e", "awsRegion": "us-east-1",
		"attributes": map[string]string{"AWSTraceHeader": "Root=" + sqsRoot + ";Parent=63995c3f42cd8ad8;Sampled=0"},
	}}}
	if got := batchFailures(t, invoke(t, s.discover, mustJSON(t, ev))); len(got) != 0 {
		t.Fatalf("batch item failures %v", got)
	}
	spans := rcv.take()
	names := map[string]bool{}
	for _, sp := range spans {
		names[sp.Name] = true
		if got := hex.EncodeToString(sp.TraceId); got != sqsHex {
			t.Errorf("span %s in trace %s, want the record's %s", sp.Name, got, sqsHex)
		}
	}
	for _, want := range []string{"discover", "tools/list", "catalog.put"} {
		if !names[want] {
			t.Errorf("no %s span among %v", want, names)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("no export arrived")
	}
	for _, a := range auths {
		if !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential="+localstack.AccessKeyID+"/") || !strings.Contains(a, "/"+localstack.Region+"/xray/aws4_request") {
			t.Errorf("Authorization %q: want SigV4 for xray in %s", a, localstack.Region)
		}
	}
}

// resignXRay signs a copy of r (its method, URL, body and the headers it
// signed) at its X-Amz-Date with the stack's credentials for xray in its
// region, and returns the Authorization that gives.
func resignXRay(r *http.Request, body []byte) string {
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date"
	}
	_, signed, _ := strings.Cut(r.Header.Get("Authorization"), "SignedHeaders=")
	signed, _, _ = strings.Cut(signed, ",")
	cp, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" {
			cp.Header.Set(h, r.Header.Get(h))
		}
	}
	cp.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: localstack.AccessKeyID, SecretAccessKey: localstack.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, cp, hex.EncodeToString(sum[:]), "xray", localstack.Region, at); err != nil {
		return err.Error()
	}
	return cp.Header.Get("Authorization")
}
