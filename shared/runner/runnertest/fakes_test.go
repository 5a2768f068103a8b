package runnertest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

func TestRequest(t *testing.T) {
	defaults := map[string]any{"server_url": "https://mcp.example.com/mcp", "tool_name": "t"}
	tests := []struct {
		name    string
		changes map[string]any
		want    string
	}{
		{"no changes", nil, `{"server_url":"https://mcp.example.com/mcp","tool_name":"t"}`},
		{"a field added", map[string]any{"vault_ids": []string{"v"}}, `{"server_url":"https://mcp.example.com/mcp","tool_name":"t","vault_ids":["v"]}`},
		{"a field replaced", map[string]any{"tool_name": "u"}, `{"server_url":"https://mcp.example.com/mcp","tool_name":"u"}`},
		{"a field removed", map[string]any{"tool_name": nil}, `{"server_url":"https://mcp.example.com/mcp"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(runnertest.Request(defaults, tt.changes)); got != tt.want {
				t.Errorf("Request = %s, want %s", got, tt.want)
			}
		})
	}
	if len(defaults) != 2 || defaults["tool_name"] != "t" {
		t.Errorf("defaults changed: %v", defaults)
	}
}

type conn interface{ Close() error }

type closer struct{}

func (closer) Close() error { return nil }

func TestConnector(t *testing.T) {
	c := &runnertest.Connector[conn]{Conn: closer{}}
	got, err := c.Connect(t.Context(), mcp.Config{URL: "https://a.example.com/mcp"})
	if err != nil || got != (closer{}) {
		t.Errorf("Connect = %v, %v; want Conn", got, err)
	}
	c.Err = errors.New("refused")
	got, err = c.Connect(t.Context(), mcp.Config{URL: "https://b.example.com/mcp"})
	if err != c.Err || got != nil {
		t.Errorf("Connect = %#v, %v; want a nil interface and Err", got, err)
	}
	want := []mcp.Config{{URL: "https://a.example.com/mcp"}, {URL: "https://b.example.com/mcp"}}
	if diff := cmp.Diff(want, c.Configs()); diff != "" {
		t.Errorf("Configs (-want +got):\n%s", diff)
	}
}

func TestWireType(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"wire error", messages.InvokeResponse_Error{Type: "mcp_protocol_error", Message: "m"}, "mcp_protocol_error"},
		{"other error", errors.New("x"), "*errors.errorString"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runnertest.WireType(tt.err); got != tt.want {
				t.Errorf("WireType = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTasksOnce(t *testing.T) {
	tasks := &runnertest.Tasks{Once: true}
	ok := &sfn.SendTaskSuccessInput{TaskToken: aws.String("a"), Output: aws.String(`{}`)}
	fail := &sfn.SendTaskFailureInput{TaskToken: aws.String("a"), Error: aws.String("internal_error")}
	if _, err := tasks.SendTaskSuccess(t.Context(), ok); err != nil {
		t.Fatalf("first report: %v", err)
	}
	var timedOut *sfntypes.TaskTimedOut
	if _, err := tasks.SendTaskSuccess(t.Context(), ok); !errors.As(err, &timedOut) {
		t.Errorf("second success = %v, want TaskTimedOut", err)
	}
	if _, err := tasks.SendTaskFailure(t.Context(), fail); !errors.As(err, &timedOut) {
		t.Errorf("failure after success = %v, want TaskTimedOut", err)
	}
	if _, err := tasks.SendTaskFailure(t.Context(), &sfn.SendTaskFailureInput{TaskToken: aws.String("b"), Error: aws.String("internal_error")}); err != nil {
		t.Errorf("another token: %v", err)
	}
	want := []runnertest.TaskReport{{TaskToken: "a", Output: []byte(`{}`)}, {TaskToken: "b", Error: "internal_error"}}
	if diff := cmp.Diff(want, tasks.Reports()); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}

// TestTasksRefusals: what Step Functions refuses, and a failure without an
// error (which TaskReport.Action could not tell from a success), is
// refused and not recorded.
func TestTasksRefusals(t *testing.T) {
	tasks := &runnertest.Tasks{}
	_, err := tasks.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String("a"), Output: aws.String("{")})
	if _, ok := errors.AsType[*sfntypes.InvalidOutput](err); !ok {
		t.Errorf("output not JSON: %v, want InvalidOutput", err)
	}
	for name, e := range map[string]string{"no error": "", "error over 256": strings.Repeat("x", 257)} {
		_, err := tasks.SendTaskFailure(t.Context(), &sfn.SendTaskFailureInput{TaskToken: aws.String("a"), Error: aws.String(e)})
		if ae, ok := errors.AsType[smithy.APIError](err); !ok || ae.ErrorCode() != "ValidationException" {
			t.Errorf("%s: %v, want ValidationException", name, err)
		}
	}
	if got := tasks.Reports(); len(got) != 0 {
		t.Errorf("reports %+v, want none", got)
	}
}
