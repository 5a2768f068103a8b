package telemetry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// XRayService is the SigV4 signing name of the X-Ray OTLP endpoint.
const XRayService = "xray"

// XRayEndpoint is the regional X-Ray OTLP/HTTP traces endpoint.
func XRayEndpoint(region string) string {
	return "https://xray." + region + ".amazonaws.com/v1/traces"
}

// ErrNoRegion is returned by Start in XRay mode without an AWS region.
var ErrNoRegion = errors.New("xray traces need an AWS region")

// exportTimeout bounds one export request of the X-Ray exporter (the
// OTLP exporter's own default).
const exportTimeout = 10 * time.Second

// xrayOptions are the exporter options of XRay mode: the regional endpoint
// unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
// names another (tests, a VPC endpoint), and every request SigV4-signed
// for XRayService with cfg's credentials and region.
func xrayOptions(cfg aws.Config) ([]otlptracehttp.Option, error) {
	if cfg.Region == "" {
		return nil, ErrNoRegion
	}
	if cfg.Credentials == nil {
		return nil, errors.New("xray traces need AWS credentials")
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithHTTPClient(&http.Client{
		Timeout:   exportTimeout,
		Transport: &sigV4{next: http.DefaultTransport, creds: cfg.Credentials, region: cfg.Region, signer: v4.NewSigner()},
	})}
	if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(XRayEndpoint(cfg.Region)))
	}
	return opts, nil
}

// sigV4 is a RoundTripper that signs each request with SigV4 for
// XRayService in region, its body hashed as sent.
type sigV4 struct {
	next   http.RoundTripper
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
}

func (s *sigV4) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("telemetry: reading the export body: %w", err)
		}
		body = b
	}
	creds, err := s.creds.Retrieve(req.Context())
	if err != nil {
		return nil, fmt.Errorf("telemetry: AWS credentials for xray: %w", err)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	if err := s.signer.SignHTTP(req.Context(), creds, out, hex.EncodeToString(sum[:]), XRayService, s.region, time.Now()); err != nil {
		return nil, fmt.Errorf("telemetry: signing the export: %w", err)
	}
	return s.next.RoundTrip(out)
}
