package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/wire"
)

type sample struct {
	Name  string   `json:"name"`
	Items []string `json:"items,omitempty"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    sample
		wantErr string // the *Error's message; "" means success
	}{
		{name: "object", body: `{"name":"a","items":["x"]}`, want: sample{Name: "a", Items: []string{"x"}}},
		{name: "leading whitespace", body: " \n{\"name\":\"a\"}", want: sample{Name: "a"}},
		{name: "trailing whitespace", body: `{"name":"a"}  ` + "\n", want: sample{Name: "a"}},
		{name: "unknown field", body: `{"name":"a","nmae":"b"}`, wantErr: `unknown field "nmae"`},
		{name: "wrong type", body: `{"name":1}`, wantErr: `field "name": want string, got JSON number`},
		{name: "trailing object", body: `{"name":"a"}{}`, wantErr: "unexpected data after the request object"},
		{name: "array", body: `[{"name":"a"}]`, wantErr: "the request must be a JSON object"},
		{name: "null", body: `null`, wantErr: "the request must be a JSON object"},
		{name: "empty", body: ``, wantErr: "the request must be a JSON object"},
		{name: "truncated", body: `{"name":"a"`, wantErr: "truncated JSON"},
		{name: "syntax", body: `{"name":'a'}`, wantErr: "malformed JSON at byte 9: invalid character '\\'' looking for beginning of value"},
		{name: "a case variant after the field", body: `{"name":"a","NAME":"b"}`, wantErr: `unknown field "NAME"`},
		{name: "a case variant alone", body: `{"Name":"a"}`, wantErr: `unknown field "Name"`},
		{name: "an escaped name is the name", body: `{"n\u0061me":"a"}`, want: sample{Name: "a"}},
		{name: "duplicate field", body: `{"name":"a","name":"b"}`, wantErr: `duplicate field "name"`},
		{name: "invalid UTF-8", body: "{\"name\":\"ca\xfft\"}", wantErr: `field "name": invalid UTF-8 at byte 11`},
		{name: "invalid UTF-8 in a key", body: "{\"na\xffme\":\"a\"}", wantErr: `the request: invalid UTF-8 at byte 4`},
		{name: "lone high surrogate", body: `{"name":"\ud800"}`, wantErr: `field "name": lone surrogate escape at byte 9`},
		{name: "high surrogate then a letter", body: `{"name":"\ud800\u0041"}`, wantErr: `field "name": lone surrogate escape at byte 9`},
		{name: "lone low surrogate", body: `{"items":["\udc00"]}`, wantErr: `field "items": lone surrogate escape at byte 11`},
		{name: "surrogate pair", body: `{"name":"\ud83d\ude00"}`, want: sample{Name: "\U0001F600"}},
		{name: "U+FFFD as sent is kept", body: `{"name":"\ufffd"}`, want: sample{Name: "\ufffd"}},
		{name: "at the depth limit", body: `{"items":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}`, wantErr: `field "items": want string, got JSON array`},
		{name: "past the depth limit", body: `{"items":` + strings.Repeat("[", 128) + strings.Repeat("]", 128) + `}`, wantErr: `field "items": nested deeper than 128 levels`},
		{name: "100,000 deep", body: `{"items":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`, wantErr: `field "items": nested deeper than 128 levels`},
		{name: "deep and truncated", body: strings.Repeat("[", 100_000), wantErr: `the request: nested deeper than 128 levels`},
		{name: "brackets in strings do not nest", body: `{"name":"` + strings.Repeat("[", 200) + `"}`, want: sample{Name: strings.Repeat("[", 200)}},
		{name: "over the size limit", body: `{"name":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, wantErr: fmt.Sprintf("the request is %d bytes, at most %d", MaxRequestBytes+11, MaxRequestBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got sample
			err := Decode([]byte(tt.body), &got)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Decode (-want +got):\n%s", diff)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) {
				t.Fatalf("Decode error = %v, want *Error", err)
			}
			if we.Type != wire.InvalidRequest || we.Message != tt.wantErr {
				t.Errorf("Decode error = %s %q, want %s %q", we.Type, we.Message, wire.InvalidRequest, tt.wantErr)
			}
		})
	}
}

func TestTaskToken(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"present", `{"task_token":"tok","x":1}`, "tok"},
		{"absent", `{"x":1}`, ""},
		{"not a string", `{"task_token":5}`, ""},
		{"not JSON", `task_token`, ""},
		{"present beside an unknown field", `{"bogus":true,"task_token":"tok"}`, "tok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := peekBody([]byte(tt.body)).TaskToken; got != tt.want {
				t.Errorf("peekBody(%s).TaskToken = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

func TestSQSEventShape(t *testing.T) {
	tests := []struct {
		name      string
		payload   string
		wantSQS   bool
		wantError bool
	}{
		{name: "direct request", payload: `{"server_url":"https://x"}`},
		{name: "not an object", payload: `"hello"`},
		{name: "records key", payload: `{"Records":[{"messageId":"m","eventSource":"aws:sqs","body":"{}"}]}`, wantSQS: true},
		{name: "empty batch", payload: `{"Records":[]}`, wantSQS: true},
		{name: "another event source", payload: `{"Records":[{"messageId":"m","eventSource":"aws:sns"}]}`, wantError: true},
		{name: "record without id", payload: `{"Records":[{"eventSource":"aws:sqs"}]}`, wantError: true},
		{name: "records not a list", payload: `{"Records":{}}`, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := sqsEvent([]byte(tt.payload))
			if (err != nil) != tt.wantError {
				t.Fatalf("sqsEvent error = %v, want error %t", err, tt.wantError)
			}
			if err != nil {
				if wire.TypeOf(err) != wire.InvalidRequest {
					t.Errorf("error type = %s, want %s", wire.TypeOf(err), wire.InvalidRequest)
				}
				return
			}
			if (ev != nil) != tt.wantSQS {
				t.Errorf("sqsEvent = %v, want SQS %t", ev, tt.wantSQS)
			}
		})
	}
}
