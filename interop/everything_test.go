package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/render"
)

// everythingTools is what server-everything 2026.8.31 lists to a client
// that declares no capabilities, in its order: the tools it registers
// conditionally (roots, sampling, elicitation) are absent.
var everythingTools = []string{
	"echo",
	"get-annotated-message",
	"get-env",
	"get-resource-links",
	"get-resource-reference",
	"get-structured-content",
	"get-sum",
	"get-tiny-image",
	"gzip-file-as-resource",
	"toggle-simulated-logging",
	"toggle-subscriber-updates",
	"trigger-long-running-operation",
	"simulate-research-query",
}

// stamp matches the wall-clock time server-everything writes into its
// resources (toLocaleTimeString), replaced by TIME before comparing.
var stamp = regexp.MustCompile(`created at [0-9]{1,2}:[0-9]{2}:[0-9]{2}( [AP]M)?`)

// binaryNote matches render's note for an embedded binary resource.
var binaryNote = regexp.MustCompile(`, ([0-9]+) bytes of binary data;`)

func TestServerEverything(t *testing.T) {
	requireInterop(t)
	p := startEverything(t)
	hc, err := mcptest.LoopbackClient(p.URL, mcp.CallTimeout)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	conn, err := mcp.Connect(ctx, mcp.Config{URL: p.URL, HTTPClient: hc})
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, p.Output())
	}
	t.Cleanup(func() { _ = conn.Close() })
	s := conn.Stats()
	if s.ProtocolVersion != "2025-11-25" || s.ServerName != "mcp-servers/everything" {
		t.Errorf("negotiated %q with %q, want 2025-11-25 with mcp-servers/everything", s.ProtocolVersion, s.ServerName)
	}
	// server/discover (answered 400), initialize, notifications/initialized.
	if s.Requests != 3 {
		t.Errorf("Connect sent %d requests, want 3", s.Requests)
	}

	listing, err := conn.ListTools(ctx)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range listing.Tools {
		names = append(names, tool.Name)
		var schema struct{ Type string }
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: input schema %s is not an object schema", tool.Name, tool.InputSchema)
		}
	}
	if diff := cmp.Diff(everythingTools, names); diff != "" {
		t.Errorf("listed tools (-want +got):\n%s", diff)
	}
	if len(listing.Refused) != 0 {
		t.Errorf("refused %v, want none", listing.Refused)
	}

	image := tinyImage(t)
	tests := []struct {
		name       string
		tool, args string
		want       mcp.CallResult
		wantBlocks []render.Block
	}{
		{
			name: "echo",
			tool: "echo", args: `{"message":"hello from mcpfn"}`,
			want:       mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "Echo: hello from mcpfn"}}},
			wantBlocks: []render.Block{{Type: "text", Text: "Echo: hello from mcpfn"}},
		},
		{
			name: "sum",
			tool: "get-sum", args: `{"a":2,"b":3.5}`,
			want:       mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "The sum of 2 and 3.5 is 5.5."}}},
			wantBlocks: []render.Block{{Type: "text", Text: "The sum of 2 and 3.5 is 5.5."}},
		},
		{
			name: "invalid arguments are a tool error, not a call error",
			tool: "get-sum", args: `{"a":"two","b":3}`,
			want: mcp.CallResult{IsError: true, Content: []mcp.Content{{Type: "text",
				Text: "MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received string at a"}}},
			wantBlocks: []render.Block{{Type: "text",
				Text: "MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received string at a"}},
		},
		{
			name: "long-running operation",
			tool: "trigger-long-running-operation", args: `{"duration":0.4,"steps":2}`,
			want:       mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "Long running operation completed. Duration: 0.4 seconds, Steps: 2."}}},
			wantBlocks: []render.Block{{Type: "text", Text: "Long running operation completed. Duration: 0.4 seconds, Steps: 2."}},
		},
		{
			name: "image decoded, rendered as a base64 image block",
			tool: "get-tiny-image", args: `{}`,
			want: mcp.CallResult{Content: []mcp.Content{
				{Type: "text", Text: "Here's the image you requested:"},
				{Type: "image", Data: image, MIMEType: "image/png"},
				{Type: "text", Text: "The image above is the MCP logo."},
			}},
			wantBlocks: []render.Block{
				{Type: "text", Text: "Here's the image you requested:"},
				{Type: "image", Source: &render.Source{Type: "base64", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(image)}},
				{Type: "text", Text: "The image above is the MCP logo."},
			},
		},
		{
			name: "structured content carried by its text block is not repeated",
			tool: "get-structured-content", args: `{"location":"Chicago"}`,
			want: mcp.CallResult{
				Content:    []mcp.Content{{Type: "text", Text: `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`}},
				Structured: json.RawMessage(`{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`),
			},
			wantBlocks: []render.Block{{Type: "text", Text: `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`}},
		},
		{
			name: "resource links",
			tool: "get-resource-links", args: `{"count":2}`,
			want: mcp.CallResult{Content: []mcp.Content{
				{Type: "text", Text: "Here are 2 resource links to resources available in this server:"},
				{Type: "resource_link", URI: "demo://resource/dynamic/blob/1", MIMEType: "text/plain"},
				{Type: "resource_link", URI: "demo://resource/dynamic/text/2", MIMEType: "text/plain"},
			}},
			wantBlocks: []render.Block{
				{Type: "text", Text: "Here are 2 resource links to resources available in this server:"},
				{Type: "text", Text: "[resource link: demo://resource/dynamic/blob/1 (text/plain)]"},
				{Type: "text", Text: "[resource link: demo://resource/dynamic/text/2 (text/plain)]"},
			},
		},
		{
			name: "embedded text resource",
			tool: "get-resource-reference", args: `{"resourceType":"Text","resourceId":1}`,
			want: mcp.CallResult{Content: []mcp.Content{
				{Type: "text", Text: "Returning resource reference for Resource 1:"},
				{Type: "resource", URI: "demo://resource/dynamic/text/1", MIMEType: "text/plain", Text: "Resource 1: This is a plaintext resource TIME"},
				{Type: "text", Text: "You can access this resource using the URI: demo://resource/dynamic/text/1"},
			}},
			wantBlocks: []render.Block{
				{Type: "text", Text: "Returning resource reference for Resource 1:"},
				{Type: "text", Text: "Resource 1: This is a plaintext resource TIME"},
				{Type: "text", Text: "You can access this resource using the URI: demo://resource/dynamic/text/1"},
			},
		},
		{
			name: "embedded blob resource is decoded and rendered as a note",
			tool: "get-resource-reference", args: `{"resourceType":"Blob","resourceId":3}`,
			want: mcp.CallResult{Content: []mcp.Content{
				{Type: "text", Text: "Returning resource reference for Resource 3:"},
				{Type: "resource", URI: "demo://resource/dynamic/blob/3", MIMEType: "text/plain", Data: []byte("Resource 3: This is a base64 blob TIME")},
				{Type: "text", Text: "You can access this resource using the URI: demo://resource/dynamic/blob/3"},
			}},
			wantBlocks: []render.Block{
				{Type: "text", Text: "Returning resource reference for Resource 3:"},
				{Type: "text", Text: "[resource omitted: demo://resource/dynamic/blob/3, text/plain, SIZE bytes of binary data; only PDF documents can be shown]"},
				{Type: "text", Text: "You can access this resource using the URI: demo://resource/dynamic/blob/3"},
			},
		},
	}
	before := conn.Stats().Requests
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := conn.CallTool(ctx, tt.tool, json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("CallTool(%s): %v", tt.tool, err)
			}
			tr, _, err := render.Render(ctx, "toolu_interop", got, render.Options{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if tr.Type != "tool_result" || tr.ToolUseID != "toolu_interop" || tr.IsError != tt.want.IsError {
				t.Errorf("tool_result %q %q is_error %t, want tool_result toolu_interop is_error %t", tr.Type, tr.ToolUseID, tr.IsError, tt.want.IsError)
			}
			checkBinaryNotes(t, got, tr.Content)
			if diff := cmp.Diff(tt.want, normalizeResult(got), jsonEqual); diff != "" {
				t.Errorf("CallResult (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBlocks, normalizeBlocks(tr.Content)); diff != "" {
				t.Errorf("rendered blocks (-want +got):\n%s", diff)
			}
		})
	}
	if got, want := conn.Stats().Requests-before, len(tests); got != want {
		t.Errorf("%d calls sent %d requests, want one each", want, got)
	}
	beforeClose := conn.Stats().Requests
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// The session-ending DELETE.
	if got := conn.Stats().Requests - beforeClose; got != 1 {
		t.Errorf("Close sent %d requests, want 1", got)
	}
}

// jsonEqual compares CallResult.Structured by meaning.
var jsonEqual = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Structured" },
	cmp.Comparer(func(a, b json.RawMessage) bool {
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		var x, y any
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
	}))

// normalizeResult replaces the wall-clock times in text and data with TIME.
func normalizeResult(res *mcp.CallResult) mcp.CallResult {
	out := *res
	out.Content = nil
	for _, c := range res.Content {
		c.Text = stamp.ReplaceAllString(c.Text, "TIME")
		if len(c.Data) == 0 {
			c.Data = nil
		} else if c.Type == "resource" {
			c.Data = stamp.ReplaceAll(c.Data, []byte("TIME"))
		}
		out.Content = append(out.Content, c)
	}
	return out
}

// normalizeBlocks replaces wall-clock times with TIME and byte counts in
// binary-resource notes with SIZE.
func normalizeBlocks(blocks []render.Block) []render.Block {
	out := make([]render.Block, 0, len(blocks))
	for _, b := range blocks {
		b.Text = stamp.ReplaceAllString(b.Text, "TIME")
		b.Text = binaryNote.ReplaceAllString(b.Text, ", SIZE bytes of binary data;")
		out = append(out, b)
	}
	return out
}

// checkBinaryNotes checks that each binary-resource note names the size of
// the matching resource's decoded data.
func checkBinaryNotes(t *testing.T, res *mcp.CallResult, blocks []render.Block) {
	t.Helper()
	if len(blocks) != len(res.Content) {
		return // the block diff reports it
	}
	for i, b := range blocks {
		m := binaryNote.FindStringSubmatch(b.Text)
		if m == nil {
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != len(res.Content[i].Data) {
			t.Errorf("block %d names %d bytes, the resource has %d", i, n, len(res.Content[i].Data))
		}
	}
}

// tinyImage is the PNG get-tiny-image returns, read from the server's source.
func tinyImage(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("node_modules/@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("MCP_TINY_IMAGE not found in get-tiny-image.js")
	}
	img, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return img
}
