package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"

	"github.com/mcpfn/mcpfn/shared/text"
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
}

// readTool reads entry, an element rawEntries returned, or returns the
// zero rawTool when it is not an object.
func readTool(entry []byte) rawTool {
	var t rawTool
	if !decode(entry, &t) {
		return rawTool{}
	}
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

// standIn is what the SDK is handed in place of an input schema it has no
// use for.
const standIn = "{}"

// slimToolsList returns msg, a JSON-RPC message whose result is the
// tools/list result page (a subslice of msg), with the replacements of
// each entry (rawTool.replacements) made. An input schema the SDK has no
// use for, one that cannot hold an x-mcp-header annotation (the only thing
// go-sdk v1.8.0 reads from a listed schema: filterValidTools, lookupTool),
// becomes standIn: the SDK would decode every schema into maps costing
// several times its bytes and re-marshal it once more; the validator
// decodes each from page instead, one at a time. msg is returned as it is
// when nothing is replaced.
func slimToolsList(msg, page []byte) []byte {
	entries, ok := rawEntries(page)
	if !ok {
		return msg
	}
	var out []byte
	var spans []replacement
	done := 0 // msg[:done] is in out
	for _, e := range entries {
		spans = readTool(e).replacements(spans[:0])
		slices.SortFunc(spans, func(a, b replacement) int { return cap(b.value) - cap(a.value) }) // by position
		for _, r := range spans {
			at := cap(msg) - cap(r.value)
			if at < done || at+len(r.value) > len(msg) || &msg[at] != &r.value[0] {
				return msg
			}
			if out == nil {
				out = make([]byte, 0, len(msg)/2)
			}
			out = append(out, msg[done:at]...)
			out = append(out, r.with...)
			done = at + len(r.value)
		}
	}
	if out == nil {
		return msg
	}
	return append(out, msg[done:]...)
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
