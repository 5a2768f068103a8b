package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// expectedErrors is the Lambda errorType of each sample event in events/
// that must fail, as e2e's eventChecks pins it. Every other event must
// succeed: a result without an errorType and, for an SQS batch, no
// batchItemFailures (permanent failures go to the DLQ, not back to SQS).
var expectedErrors = map[string]string{
	"call-malformed-arguments-not-object.json":   "invalid_request_error",
	"call-malformed-unknown-field.json":          "invalid_request_error",
	"call-tool-not-in-catalog.json":              "invalid_request_error",
	"discover-egress-denied-metadata.json":       "mcp_egress_denied_error",
	"discover-malformed-missing-server-url.json": "invalid_request_error",
}

// expected describes the outcome the event at path must have, for
// messages: its errorType, or "success".
func expected(path string) string {
	if et, ok := expectedErrors[filepath.Base(path)]; ok {
		return "errorType " + et
	}
	return "success"
}

// outcome describes what res is, in the words of expected.
func outcome(res localstack.Result) string {
	if res.ErrorType != "" {
		return "errorType " + res.ErrorType
	}
	var batch struct {
		Failures []json.RawMessage `json:"batchItemFailures"`
	}
	if json.Unmarshal(res.Payload, &batch) == nil && len(batch.Failures) > 0 {
		return fmt.Sprintf("%d batchItemFailures", len(batch.Failures))
	}
	return "success"
}

// checkOutcome is nil when res is the outcome the event at path must
// have, else an error naming both.
func checkOutcome(path string, res localstack.Result) error {
	want, got := expected(path), outcome(res)
	if want == got {
		return nil
	}
	return fmt.Errorf("%s: answered %s, want %s", path, got, want)
}
