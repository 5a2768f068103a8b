package render_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/render"
)

func TestRefusal(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"refusal", fmt.Errorf("mcp: call %q: %w: %w", "get_weather", mcp.ErrServerAnswered, errors.New(`calling "tools/call": Unknown tool: get_weather`))},
		{"refusal_bare", mcp.ErrServerAnswered},
		{"refusal_input_required", fmt.Errorf("mcp: call %q: %w: the server asked for input (input_required) and this client has none to give", "book", mcp.ErrServerAnswered)},
		{"refusal_hostile", fmt.Errorf("%w: denied\n\x1b[31mAuthorization: Bearer sk-live-123\u2028 see https://user:pw@evil.example/x?api_key=k1#f, api_key=k2", mcp.ErrServerAnswered)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, render.Refusal("toolu_r", tt.err, nil))
		})
	}
}

func TestRefusalSanitizes(t *testing.T) {
	secrets := []string{"sk-live-123", "pw@", "k1", "k2", "s3cr3t", "\x1b"}
	msg := "denied\n\x1b[31m Authorization: Bearer sk-live-123 token=s3cr3t https://user:pw@evil.example/x?api_key=k1 password: k2 " + strings.Repeat("long ", 200)
	got := render.Refusal("toolu_r", fmt.Errorf("%w: %s", mcp.ErrServerAnswered, msg), nil)
	if !got.IsError || got.Type != "tool_result" || got.ToolUseID != "toolu_r" || len(got.Content) != 1 {
		t.Fatalf("Refusal = %+v, want one text block with is_error", got)
	}
	text := got.Content[0].Text
	quoted, ok := strings.CutSuffix(text, "\nDo not retry the same call unchanged.")
	if !ok {
		t.Fatalf("refusal text %q does not end with the instruction", text)
	}
	for _, s := range append(secrets, "\n") {
		if strings.Contains(quoted, s) {
			t.Errorf("quoted server message contains %q: %q", s, quoted)
		}
	}
	if strings.Contains(text, mcp.ErrServerAnswered.Error()) {
		t.Errorf("refusal repeats the sentinel's words: %q", text)
	}
	if !strings.Contains(text, "Do not retry the same call") || !strings.Contains(text, "https://evil.example") {
		t.Errorf("refusal text %q lacks the instruction or the URL's origin", text)
	}
	if len(text) > 500 {
		t.Errorf("refusal text is %d bytes, want a short message", len(text))
	}
}

func TestRefusalOtherError(t *testing.T) {
	got := render.Refusal("toolu_r", errors.New("plain failure"), nil)
	if !got.IsError || !strings.Contains(got.Content[0].Text, "plain failure") {
		t.Errorf("Refusal of an unwrapped error = %+v", got)
	}
	if got := render.Refusal("toolu_r", nil, nil); !got.IsError || len(got.Content) != 1 {
		t.Errorf("Refusal(nil) = %+v", got)
	}
}
