package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"

	"github.com/mcpfn/mcpfn/shared/text"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawEntries returns the elements of the "tools" array of a raw tools/list
// result, as json.Unmarshal would find them, or false when there is none.
// raw is a value readMessage returned.
func rawEntries(raw []byte) ([]json.RawMessage, bool) {
	var result struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if decode(raw, &result) {
		return result.Tools, result.Tools != nil
	}
	// That fails on a "tools" that is not an array even when a later one,
	// the one a map keeps, is.
	var last struct {
		Tools json.RawMessage `json:"tools"`
	}
	if !decode(raw, &last) || len(last.Tools) == 0 || last.Tools[0] != '[' || !decode(last.Tools, &result.Tools) {
		return nil, false
	}
	return result.Tools, true
}

// rawTool is what is read of a raw tools/list entry.
type rawTool struct {
	Name         json.RawMessage `json:"name"`
	Title        members         `json:"title"`
	InputSchema  counted         `json:"inputSchema"`
	OutputSchema counted         `json:"outputSchema"`
	Annotations  members         `json:"annotations"`
	Meta         members         `json:"_meta"`

	object bool // the entry is a JSON object, read
}

// readTool reads entry, an element rawEntries returned, or returns the
// zero rawTool when it is not an object.
func readTool(entry []byte) rawTool {
	var t rawTool
	if len(entry) == 0 || entry[0] != '{' || !decode(entry, &t) {
		return rawTool{}
	}
	t.object = true
	return t
}

// name returns the entry's "name" string, or "".
func (t rawTool) name() string {
	s, _ := stringValue(t.Name)
	return s
}

// hasName reports whether the entry's "name" is the string name.
func (t *rawTool) hasName(name string) bool {
	if n := t.Name; validToolName(name) && len(n) == len(name)+2 && n[0] == '"' && string(n[1:len(n)-1]) == name {
		return true // a literal of characters that are never escaped
	}
	return t.name() == name
}

// rawName returns an entry's "name" string, or "".
func rawName(entry []byte) string { return readTool(entry).name() }

// standIn is what the SDK's decoding of an entry is handed in place of an
// input schema it has no use for.
const standIn = "{}"

// taken reports whether the SDK is handed null in place of the entry t
// was read from: an object whose input schema cannot hold an x-mcp-header
// annotation (no such bytes, no \u escape, at most one inputSchema key),
// the only thing go-sdk v1.8.0 reads from a listed schema (filterValidTools,
// lookupTool). The SDK drops a null entry unread; the validator decodes a
// taken one itself (sdkTool).
func (t rawTool) taken() bool {
	in := t.InputSchema
	return t.object && in.n <= 1 &&
		!bytes.Contains(in.raw, []byte("x-mcp-header")) && !bytes.Contains(in.raw, []byte(`\u`))
}

// slimToolsList returns msg, a JSON-RPC message whose result is the
// tools/list result page (a subslice of msg), with each taken entry
// (rawTool.taken) null and the replacements of every other entry
// (rawTool.replacements) made. taken is the decodedCost of the taken
// entries without their input schemas, what sdkTool builds of them; zero
// when none is taken. go-sdk would decode every listed schema into maps
// costing several times its bytes, re-marshal it, and decode that again
// with a 32 KiB buffer per tool (filterValidTools); the validator decodes
// each taken entry from page instead, one at a time. msg is returned as it
// is, and zero, when nothing is replaced.
func slimToolsList(msg, page []byte) (out []byte, taken int64) {
	entries, ok := rawEntries(page)
	if !ok {
		return msg, 0
	}
	var spans []replacement
	for _, e := range entries {
		if t := readTool(e); t.taken() {
			spans = append(spans, replacement{e, "null"})
			taken += decodedCost(e) - decodedCost(t.InputSchema.raw)
		} else {
			spans = t.replacements(spans)
		}
	}
	if out, ok = splice(msg, spans); !ok {
		return msg, 0
	}
	return out, taken
}

// splice returns msg with each replacement made, or false when one is not
// a subslice of msg or two overlap. msg is returned as it is when there is
// none.
func splice(msg []byte, spans []replacement) ([]byte, bool) {
	if len(spans) == 0 {
		return msg, true
	}
	slices.SortFunc(spans, func(a, b replacement) int { return cap(b.value) - cap(a.value) }) // by position
	out := make([]byte, 0, len(msg)/2)
	done := 0 // msg[:done] is in out
	for _, r := range spans {
		at := cap(msg) - cap(r.value)
		if at < done || at+len(r.value) > len(msg) || len(r.value) == 0 || &msg[at] != &r.value[0] {
			return msg, false
		}
		out = append(out, msg[done:at]...)
		out = append(out, r.with...)
		done = at + len(r.value)
	}
	return append(out, msg[done:]...), true
}

// sdkTool decodes a taken entry as go-sdk would have decoded it within its
// page, with the entry's replacements made: false where the SDK would have
// failed the whole page (an ill-typed name or description, say). Its
// nesting is not held to go-sdk's 1000 levels: a page the SDK fails for
// that is decoded here (Conn.redecode), like any other, up to readMessage's
// bound.
func sdkTool(entry []byte, t rawTool) (*sdk.Tool, bool) {
	slim, ok := splice(entry, t.replacements(nil))
	if !ok {
		return nil, false
	}
	var tool sdk.Tool
	if !decode(slim, &tool) {
		return nil, false
	}
	return &tool, true
}

// dropLog is the SDK's logger for one Conn. It keeps what go-sdk logs when
// it drops a listed tool (filterValidTools logs the tool's name and the
// error at level Error) and discards everything else.
type dropLog struct {
	mu      sync.Mutex
	dropped map[string]string
}

func (l *dropLog) reset() {
	l.mu.Lock()
	l.dropped = nil
	l.mu.Unlock()
}

func (l *dropLog) drops() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

func (l *dropLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }

func (l *dropLog) Handle(_ context.Context, r slog.Record) error {
	var tool, why string
	var hasTool bool
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "tool":
			tool, hasTool = a.Value.String(), true
		case "error":
			why = a.Value.String()
		}
		return true
	})
	if !hasTool {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped == nil {
		l.dropped = map[string]string{}
	}
	if _, ok := l.dropped[tool]; !ok {
		l.dropped[tool] = text.Truncate(why, 512)
	}
	return nil
}

func (l *dropLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *dropLog) WithGroup(string) slog.Handler      { return l }
