package main

import (
	"encoding/json"
	"io"
	"path"
	"time"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// catalogJSON is what get prints (docs/contract.md). Tools carry every
// stored field under mcp.Tool's snake_case names. DiscoveredAt and
// CheckedAt are absent when only a failure is recorded. The server's
// origin is the only part of its URL printed (the head keeps it sealed).
// OnChange and Quarantined (tools included in Tools) are absent when none
// is recorded.
type catalogJSON struct {
	ID              string                `json:"id"`
	Version         string                `json:"version"`
	ProtocolVersion string                `json:"protocol_version"`
	Server          serverJSON            `json:"server"`
	ContentHash     string                `json:"content_hash"`
	DiscoveredAt    string                `json:"discovered_at,omitempty"`
	CheckedAt       string                `json:"checked_at,omitempty"`
	ToolCount       int                   `json:"tool_count"`
	Refused         []mcp.Refusal         `json:"refused"`
	LastFailure     *failureJSON          `json:"last_failure,omitempty"`
	OnChange        string                `json:"on_change,omitempty"`
	Quarantined     []catalog.Quarantined `json:"quarantined,omitempty"`
	Tools           []mcp.Tool            `json:"tools"`
}

type serverJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Origin  string `json:"origin,omitempty"`
}

type failureJSON struct {
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
	At        string `json:"at"`
}

// anthropicTool is one entry of the Messages API tools array.
type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// catalogOutput is c as get prints it; the server's discovery record is
// left out.
func catalogOutput(c *catalog.Catalog) catalogJSON {
	out := catalogJSON{
		ID: c.ID, Version: c.Version, ProtocolVersion: c.ProtocolVersion,
		Server:       serverJSON{Name: c.ServerName, Version: c.ServerVersion, Origin: c.ServerOrigin},
		ContentHash:  c.ContentHash,
		DiscoveredAt: timestamp(c.DiscoveredAt), CheckedAt: timestamp(c.CheckedAt),
		ToolCount: len(c.Tools), Refused: c.Refused, Tools: c.Tools,
		OnChange: c.OnChange, Quarantined: c.Quarantined,
	}
	if out.Refused == nil {
		out.Refused = []mcp.Refusal{}
	}
	if out.Tools == nil {
		out.Tools = []mcp.Tool{}
	}
	if f := c.LastFailure; f != nil {
		out.LastFailure = &failureJSON{ErrorType: f.ErrorType, Message: f.Message, At: timestamp(f.At)}
	}
	return out
}

// timestamp is t in UTC as RFC 3339 with the fraction it has, or "" for
// the zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// anthropicTools is tools in the Messages API shape: each named by its
// model name.
func anthropicTools(tools []mcp.Tool) []anthropicTool {
	out := make([]anthropicTool, len(tools))
	for i, t := range tools {
		out[i] = anthropicTool{Name: t.ModelName, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out
}

// filter selects tools by the server's name and the read-only hint. A tool
// is kept when allow is empty or one allow glob matches its name, no deny
// glob matches it, and, with readOnly, it is annotated readOnlyHint: true.
// The globs are valid path.Match patterns (globs.Set checks them).
type filter struct {
	allow, deny []string
	readOnly    bool
}

func (f filter) apply(tools []mcp.Tool) []mcp.Tool {
	var kept []mcp.Tool
	for _, t := range tools {
		if f.keeps(t) {
			kept = append(kept, t)
		}
	}
	return kept
}

func (f filter) keeps(t mcp.Tool) bool {
	if len(f.allow) > 0 && !matchAny(f.allow, t.Name) {
		return false
	}
	if matchAny(f.deny, t.Name) {
		return false
	}
	if f.readOnly {
		a := t.Annotations
		return a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
	}
	return true
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// writeJSON writes v to w as indented JSON and a newline, with <, > and &
// as themselves.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
