package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mcpfn/mcpfn/shared/strictjson"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Request limits (docs/contract.md). A body over MaxRequestBytes, nested
// deeper than MaxRequestDepth, or with a task_token longer than
// MaxTaskToken characters (Step Functions' own limit) is refused.
const (
	MaxRequestBytes = 1 << 20
	MaxRequestDepth = 128
	MaxTaskToken    = 2048
)

// Decode decodes one JSON object from body into v, a pointer to a struct,
// exactly (package strictjson): its field names match v's json tags case
// for case; unknown and duplicate fields, trailing data, invalid UTF-8
// (lone surrogate escapes included), and bodies over MaxRequestBytes or
// nested deeper than MaxRequestDepth are refused. Every failure is a
// *wire.Error of type wire.InvalidRequest whose message names the field at
// fault, where one is.
func Decode(body []byte, v any) error {
	err := strictjson.Decode(body, v, strictjson.Limits{MaxBytes: MaxRequestBytes, MaxDepth: MaxRequestDepth})
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return err
	}
	msg := se.Error()
	switch se.Kind {
	case strictjson.Size:
		msg = fmt.Sprintf("the request is %d bytes, at most %d", se.Size, se.Limit)
	case strictjson.NotObject:
		msg = "the request must be a JSON object"
	case strictjson.Trailing:
		msg = "unexpected data after the request object"
	case strictjson.Depth, strictjson.UTF8, strictjson.Surrogate:
		if se.Field == "" {
			msg = "the request: " + msg
		}
	}
	return wire.Errorf(wire.InvalidRequest, nil, "%s", msg)
}

// describeJSONError words an encoding/json error without quoting the input.
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
	}
	return err.Error()
}

// peek is what the runner reads from a body before it is decoded, so that
// a refusal still reaches the task it names and is scrubbed of the URL.
type peek struct {
	TaskToken string `json:"task_token"`
	ServerURL string `json:"server_url"`
}

// peekBody returns the task_token and server_url a body carries, read by
// exact name; fields that are absent, not strings, or in a body that is
// not a JSON object are "". It never fails: a body that Decode later
// refuses still reports its refusal to the task it names.
func peekBody(body []byte) peek {
	var p peek
	if len(body) > MaxRequestBytes {
		return p
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return p
	}
	str := func(name string) string {
		var s string
		if raw, ok := fields[name]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	return peek{TaskToken: str("task_token"), ServerURL: str("server_url")}
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
		return nil, wire.Errorf(wire.InvalidRequest, nil, "malformed SQS event: %s", describeJSONError(err))
	}
	for i, r := range ev.Records {
		if r.EventSource != "aws:sqs" {
			return nil, wire.Errorf(wire.InvalidRequest, nil, "record %d: event source %q, want aws:sqs", i, r.EventSource)
		}
		if r.MessageId == "" {
			return nil, wire.Errorf(wire.InvalidRequest, nil, "record %d: no messageId", i)
		}
	}
	return &ev, nil
}
