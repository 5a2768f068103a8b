package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolPages bounds how many tools/list pages one listing requests.
const maxToolPages = 100

// maxRefusalName bounds the name a Refusal repeats from the server.
const maxRefusalName = 256

// toolName is what the Anthropic API accepts as a tool name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Refusal reasons. Each starts with a word naming the check.
const (
	reasonNullEntry = "null: the entry is null"
	reasonName      = "name: not accepted as a tool name (1-64 of a-z A-Z 0-9 _ -)"
	reasonDuplicate = "duplicate: an earlier entry has this name"
	reasonSchema    = `schema: input schema is not a JSON object with "type": "object"`
	reasonMarshal   = "marshal: the entry does not re-marshal: "
	reasonSDK       = "client-library: go-sdk dropped the entry: "
)

// ListTools lists every tool the server offers, following pagination, within
// ListTimeout and ctx. Every entry the server sent ends in Tools or in
// Refused with a reason. Errors wrap ErrProtocol (an unusable answer,
// including ErrBudgetExceeded, ErrTooManyPages and ErrCursorLoop),
// ErrUnauthorized, guard errors, or a network error or deadline.
func (c *Conn) ListTools(ctx context.Context) (listing Listing, err error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	ctx, op, done := c.begin(ctx)
	defer done()
	defer func() {
		if r := recover(); r != nil {
			listing, err = Listing{}, fmt.Errorf("mcp: list tools: %w: the server's answer crashed the MCP client library: %v", ErrProtocol, r)
		}
	}()

	v := newValidator()
	seen := map[string]bool{"": true}
	cursor := ""
	for page := 1; ; page++ {
		if page > maxToolPages {
			return Listing{}, fmt.Errorf("mcp: list tools: %w: %w: more than %d pages", ErrProtocol, ErrTooManyPages, maxToolPages)
		}
		c.log.reset()
		res, err := listPage(ctx, c.cs, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return Listing{}, c.fail(ctx, op, "list tools", ErrProtocol, err)
		}
		raw, ok := c.tr.takePage(op)
		if ok {
			c.keepPage(cursor, raw)
		} else {
			raw = c.page(cursor) // served from the SDK's cache
		}
		v.page(res.Tools, raw, c.log.drops())

		cursor = res.NextCursor
		if cursor == "" {
			return v.listing, nil
		}
		if seen[cursor] {
			return Listing{}, fmt.Errorf("mcp: list tools: %w: %w: page %d repeats cursor %q", ErrProtocol, ErrCursorLoop, page, truncate(cursor, 64))
		}
		seen[cursor] = true
	}
}

// listPage is the SDK call for one page; tests replace it to inject a panic.
var listPage = func(ctx context.Context, cs *sdk.ClientSession, p *sdk.ListToolsParams) (*sdk.ListToolsResult, error) {
	return cs.ListTools(ctx, p)
}

func (c *Conn) keepPage(cursor string, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[string][]byte{}
	}
	c.pages[cursor] = raw
}

func (c *Conn) page(cursor string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages[cursor]
}

// validator accepts or refuses entries across the pages of one listing.
type validator struct {
	listing  Listing
	accepted map[string]bool
}

func newValidator() *validator {
	return &validator{accepted: map[string]bool{}}
}

func (v *validator) refuse(name, reason string) {
	v.listing.Refused = append(v.listing.Refused, Refusal{Name: truncate(name, maxRefusalName), Reason: reason})
}

// page walks the raw entries of one page alongside the SDK's decoded ones.
// The SDK's list is the raw list minus the entries it dropped, in order;
// drops maps the names it logged to why.
func (v *validator) page(tools []*sdk.Tool, raw json.RawMessage, drops map[string]string) {
	entries := rawEntries(raw)
	if entries == nil {
		for _, t := range tools {
			v.consider(t)
		}
		return
	}
	toDrop := -len(tools)
	for _, e := range entries {
		if !isNull(e) {
			toDrop++
		}
	}
	j := 0
	for _, e := range entries {
		if isNull(e) {
			v.refuse("", reasonNullEntry)
			continue
		}
		name := rawName(e)
		if toDrop > 0 && (j >= len(tools) || tools[j] == nil || tools[j].Name != name) {
			why, ok := drops[name]
			if !ok {
				why = "no reason logged"
			}
			v.refuse(name, reasonSDK+why)
			toDrop--
			continue
		}
		if j < len(tools) {
			v.consider(tools[j])
			j++
		}
	}
	for ; j < len(tools); j++ {
		v.consider(tools[j])
	}
}

func isNull(e json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(e), []byte("null")) }

func (v *validator) consider(t *sdk.Tool) {
	if t == nil {
		v.refuse("", reasonNullEntry)
		return
	}
	if !toolName.MatchString(t.Name) {
		v.refuse(t.Name, reasonName)
		return
	}
	if v.accepted[t.Name] {
		v.refuse(t.Name, reasonDuplicate)
		return
	}
	if _, err := json.Marshal(t); err != nil {
		v.refuse(t.Name, reasonMarshal+err.Error())
		return
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		v.refuse(t.Name, reasonMarshal+err.Error())
		return
	}
	var obj map[string]any
	if json.Unmarshal(schema, &obj) != nil || obj == nil || obj["type"] != "object" {
		v.refuse(t.Name, reasonSchema)
		return
	}
	v.accepted[t.Name] = true
	v.listing.Tools = append(v.listing.Tools, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
}

// rawEntries returns the "tools" array of a raw tools/list result, or nil.
func rawEntries(raw json.RawMessage) []json.RawMessage {
	var result map[string]json.RawMessage
	if json.Unmarshal(raw, &result) != nil {
		return nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(result["tools"], &entries) != nil {
		return nil
	}
	return entries
}

// rawName returns an entry's "name" string, matched case-sensitively as the
// SDK does, or "".
func rawName(entry json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(entry, &m) != nil {
		return ""
	}
	var name string
	_ = json.Unmarshal(m["name"], &name)
	return name
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
		l.dropped[tool] = truncate(why, 512)
	}
	return nil
}

func (l *dropLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *dropLog) WithGroup(string) slog.Handler      { return l }
