package render_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/render"
	"github.com/mcpfn/mcpfn/shared/text"
)

// secret is a credential a hostile server quotes; scrub removes it as
// runner.Item.Scrub would.
const secret = "vault-tok-9f8e7d"

func scrub(s string) string { return text.Redact(s, secret) }

// TestScrub: every text block converted from the server's answer passes
// through Options.Scrub before the limit, the stored object included.
func TestScrub(t *testing.T) {
	res := &mcp.CallResult{
		Content: []mcp.Content{
			{Type: "text", Text: "the credential " + secret + " works"},
			{Type: "resource", URI: "file:///" + secret, MIMEType: "text/plain", Text: "resource text " + secret},
			{Type: "resource_link", URI: "https://example.com/" + secret},
			{Type: "image", MIMEType: "image/png", Data: pngData},
		},
		Structured: json.RawMessage(`{"token_was":"` + secret + `"}`),
	}
	for _, tt := range []struct {
		name string
		opts render.Options
	}{
		{"inline", render.Options{}},
		{"truncated", render.Options{MaxBytes: 300}},
		{"stored", render.Options{MaxBytes: 300, Bucket: "results"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeS3{}
			if tt.opts.Bucket != "" {
				tt.opts.Objects = f
			}
			tt.opts.Scrub = scrub
			got, _, err := render.Render(t.Context(), "toolu_s", res, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(got)
			if strings.Contains(string(raw), secret) {
				t.Errorf("result carries the secret: %s", raw)
			}
			for _, p := range f.puts {
				if strings.Contains(string(p.Body), secret) {
					t.Errorf("stored object carries the secret: %s", p.Body)
				}
			}
			if tt.name == "inline" {
				if len(got.Content) != 5 || got.Content[0].Text != "the credential [redacted] works" || got.Content[3].Source == nil {
					t.Errorf("content = %+v, want the blocks with the secret replaced and the image kept", got.Content)
				}
			}
		})
	}
}

// TestRefusalScrubs: the server's message is scrubbed before it is cut, so
// a secret straddling the cut leaves no prefix behind.
func TestRefusalScrubs(t *testing.T) {
	for _, pad := range []int{0, 270, 278} { // 270, 278: the secret straddles the 300-byte cut
		t.Run(fmt.Sprint(pad), func(t *testing.T) {
			msg := strings.Repeat("x", pad) + " the credential " + secret + " is not valid here"
			got := render.Refusal("toolu_r", fmt.Errorf("mcp: call: %w: %s", mcp.ErrServerAnswered, msg), scrub)
			text := got.Content[0].Text
			for i := 6; i <= len(secret); i++ {
				if strings.Contains(text, secret[:i]) {
					t.Fatalf("refusal text carries %q of the secret: %q", secret[:i], text)
				}
			}
			if pad == 0 && !strings.Contains(text, "the credential [redacted] is not valid here") {
				t.Errorf("refusal text %q, want the message with the secret replaced", text)
			}
		})
	}
}
