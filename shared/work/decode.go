package work

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Decode decodes one JSON object from body into v, refusing unknown fields,
// trailing data and anything but an object. Every failure is an
// *Error of type InvalidRequest whose message names the problem.
func Decode(body []byte, v any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Errorf(InvalidRequest, nil, "the request must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(InvalidRequest, nil, "%s", describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(InvalidRequest, nil, "unexpected data after the request object")
	}
	return nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated JSON"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return err.Error()
}

// taskToken returns the task_token a body carries, or "" when it carries
// none or is not a JSON object. It never fails: a body that Decode later
// refuses still reports its refusal to the task it names.
func taskToken(body []byte) string {
	var peek struct {
		TaskToken string `json:"task_token"`
	}
	if json.Unmarshal(body, &peek) != nil {
		return ""
	}
	return peek.TaskToken
}

// sqsEvent returns the SQS event payload carries, or nil when payload is a
// direct invocation (anything without a top-level "Records" key).
func sqsEvent(payload []byte) (*events.SQSEvent, error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(payload, &probe) != nil {
		return nil, nil
	}
	if _, ok := probe["Records"]; !ok {
		return nil, nil
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, Errorf(InvalidRequest, nil, "malformed SQS event: %s", describeJSONError(err))
	}
	for i, r := range ev.Records {
		if r.EventSource != "aws:sqs" {
			return nil, Errorf(InvalidRequest, nil, "record %d: event source %q, want aws:sqs", i, r.EventSource)
		}
		if r.MessageId == "" {
			return nil, Errorf(InvalidRequest, nil, "record %d: no messageId", i)
		}
	}
	return &ev, nil
}
