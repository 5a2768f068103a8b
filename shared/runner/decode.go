package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

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
// exactly: its field names match v's json tags case for case; unknown and
// duplicate fields, trailing data, invalid UTF-8 (lone surrogate escapes
// included), and bodies over MaxRequestBytes or nested deeper than
// MaxRequestDepth are refused. Every failure is a *wire.Error of type
// wire.InvalidRequest whose message names the field at fault, where one is.
func Decode(body []byte, v any) error {
	keys, err := checkBody(body)
	if err != nil {
		return err
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return wire.Errorf(wire.InvalidRequest, nil, "the request must be a JSON object")
	}
	if err := exactNames(keys, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return wire.Errorf(wire.InvalidRequest, nil, "%s", describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wire.Errorf(wire.InvalidRequest, nil, "unexpected data after the request object")
	}
	return nil
}

// exactNames refuses a key that is no json tag of v's struct as written:
// encoding/json would match "TOOL_NAME" to the tag "tool_name".
func exactNames(keys []string, v any) error {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	names := make(map[string]bool, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	for _, k := range keys {
		if !names[k] {
			return wire.Errorf(wire.InvalidRequest, nil, "unknown field %q", k)
		}
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

// checkBody applies the rules encoding/json does not: the size, the
// nesting depth, valid UTF-8 with no lone surrogate escape, and no
// duplicate top-level field. It names the top-level field a fault is in,
// and returns the top-level keys. Syntax it leaves to the decoder: on
// malformed input it may pass.
func checkBody(body []byte) ([]string, error) {
	if len(body) > MaxRequestBytes {
		return nil, wire.Errorf(wire.InvalidRequest, nil, "the request is %d bytes, at most %d", len(body), MaxRequestBytes)
	}
	s := scanner{body: body, seen: map[string]bool{}}
	if err := s.run(); err != nil {
		return nil, wire.Errorf(wire.InvalidRequest, nil, "%s", err)
	}
	return s.keys, nil
}

// scanner walks a JSON text once, tracking nesting and the top-level key
// whose value it is in.
type scanner struct {
	body    []byte
	depth   int
	object  bool // the top-level value is an object
	keyNext bool // the next top-level string is a key
	field   string
	seen    map[string]bool
	keys    []string
}

func (s *scanner) where() string {
	if s.field == "" {
		return "the request"
	}
	return fmt.Sprintf("field %q", s.field)
}

func (s *scanner) run() error {
	b := s.body
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			s.depth++
			if s.depth > MaxRequestDepth {
				return fmt.Errorf("%s: nested deeper than %d levels", s.where(), MaxRequestDepth)
			}
			if s.depth == 1 && c == '{' {
				s.object, s.keyNext = true, true
			}
		case '}', ']':
			s.depth--
		case ',':
			if s.depth == 1 && s.object {
				s.keyNext = true
			}
		case '"':
			end, err := s.str(i + 1)
			if err != nil {
				return err
			}
			if s.depth == 1 && s.object && s.keyNext {
				if err := s.key(b[i : end+1]); err != nil {
					return err
				}
			}
			i = end
		}
	}
	return nil
}

// key records a top-level key (quoted, as in the body) and refuses a
// duplicate.
func (s *scanner) key(quoted []byte) error {
	s.keyNext = false
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return nil // malformed: the decoder reports it
	}
	if s.seen[k] {
		return fmt.Errorf("duplicate field %q", k)
	}
	s.seen[k] = true
	s.keys = append(s.keys, k)
	s.field = k
	return nil
}

// str checks the string starting after the quote at i and returns the
// index of its closing quote (len(body) if unterminated).
func (s *scanner) str(i int) (int, error) {
	b := s.body
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i, nil
		case c == '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				n, err := s.escape(i)
				if err != nil {
					return 0, err
				}
				i += n
				continue
			}
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				return 0, fmt.Errorf("%s: invalid UTF-8 at byte %d", s.where(), i)
			}
			i += n
		}
	}
	return i, nil
}

// escape checks the \u escape at i and returns its length: a surrogate
// must be a high one followed by a low one.
func (s *scanner) escape(i int) (int, error) {
	r, ok := hex4(s.body, i+2)
	if !ok {
		return 2, nil // malformed: the decoder reports it
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, fmt.Errorf("%s: lone surrogate escape at byte %d", s.where(), i)
	case r >= 0xD800 && r <= 0xDBFF:
		lo, ok := hex4(s.body, i+8)
		if !ok || s.body[i+6] != '\\' || s.body[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
			return 0, fmt.Errorf("%s: lone surrogate escape at byte %d", s.where(), i)
		}
		return 12, nil
	}
	return 6, nil
}

// hex4 decodes the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
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
