package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/shared/text"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// maxToolPages bounds how many tools/list pages one listing requests.
const maxToolPages = 100

// maxRefusalName bounds the name a Refusal repeats from the server.
const maxRefusalName = 256

// Refusal reasons. Each starts with a word naming the check.
const (
	reasonNullEntry = "null: the entry is null"
	reasonName      = "name: not accepted as a tool name (1-128 of a-z A-Z 0-9 _ . -)"
	reasonDuplicate = "duplicate: an earlier entry has this name"
	reasonSchema    = `schema: input schema is not a JSON object with "type": "object"`
	reasonMarshal   = "marshal: the entry does not re-marshal: "
	reasonSDK       = "client-library: go-sdk dropped the entry: "
	reasonCost      = "schema: input schema would decode to more than MaxDecodedCost bytes"
)

// ListTools lists every tool the server offers, following pagination, within
// ListTimeout and ctx. Every entry the server sent ends in Tools or in
// Refused with a reason. Errors wrap ErrProtocol (an unusable answer,
// including ErrBudgetExceeded, ErrTooManyPages and ErrCursorLoop),
// ErrUnauthorized, guard errors, ErrNotConnected, or a network error or
// deadline.
func (c *Conn) ListTools(ctx context.Context) (listing Listing, err error) {
	if c == nil || c.cs == nil {
		return Listing{}, fmt.Errorf("mcp: list tools: %w: the Conn did not come from Connect", ErrNotConnected)
	}
	ctx, cancel := context.WithTimeout(ctx, listBudget)
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
		raw, ok := c.tr.takePage(op)
		if err != nil && ok && ctx.Err() == nil {
			res, raw.took, err = c.redecode(op, raw.result, err)
		}
		if err != nil {
			return Listing{}, c.fail(ctx, op, "list tools", ErrProtocol, err)
		}
		if ok {
			c.keepPage(cursor, raw)
		} else {
			raw = c.page(cursor) // served from the SDK's cache
		}
		if err := v.page(res.Tools, raw, c.log.drops()); err != nil {
			return Listing{}, fmt.Errorf("mcp: list tools: %w: page %d: %w", ErrProtocol, page, err)
		}
		pageChecked()
		cursor = res.NextCursor
		raw, res = keptPage{}, nil // the next page need not share the heap with this one

		if cursor == "" {
			return v.listing, nil
		}
		if seen[cursor] {
			return Listing{}, fmt.Errorf("mcp: list tools: %w: %w: page %d repeats cursor %q", ErrProtocol, ErrCursorLoop, page, text.Truncate(cursor, 64))
		}
		seen[cursor] = true
	}
}

// redecode decodes a page the SDK refused to decode: an SSE answer
// reaches it as sent, and one entry's ill-typed title, annotations or
// _meta fails the whole page. The page, with each such value null (as a
// JSON answer is handed to the SDK), is decoded here; the validator then
// refuses those entries. Null entries are dropped, as the SDK drops them.
// Any other failure, or a page that still does not
// decode, keeps the SDK's error.
func (c *Conn) redecode(op *operation, raw []byte, sdkErr error) (*sdk.ListToolsResult, bool, error) {
	if fatal, _, _ := c.tr.outcome(op); fatal != nil || !strings.Contains(sdkErr.Error(), "unmarshal") {
		return nil, false, sdkErr
	}
	var res sdk.ListToolsResult
	slim, taken := slimToolsList(raw, raw)
	if !decode(slim, &res) {
		return nil, false, sdkErr
	}
	// The SDK drops a null entry (filterValidTools); so must we, or the
	// validator pairs each later entry with the one before it.
	res.Tools = slices.DeleteFunc(res.Tools, func(t *sdk.Tool) bool { return t == nil })
	return &res, taken > 0, nil
}

// pageChecked runs after each page is checked, while the page, raw and
// decoded, is still live; tests measure the heap there.
var pageChecked = func() {}

// listPage is the SDK call for one page; tests replace it to inject a panic.
var listPage = func(ctx context.Context, cs *sdk.ClientSession, p *sdk.ListToolsParams) (*sdk.ListToolsResult, error) {
	return cs.ListTools(ctx, p)
}

// keepPage keeps the raw page of cursor when the SDK may serve it from its
// cache later, which it does only for a page with a positive ttlMs
// (TestListToolsSeesEntriesTheSDKServesFromItsCache); any other page is
// dropped as soon as it is checked.
func (c *Conn) keepPage(cursor string, raw keptPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !mayBeCached(raw.result) {
		delete(c.pages, cursor)
		return
	}
	if c.pages == nil {
		c.pages = map[string]keptPage{}
	}
	c.pages[cursor] = raw
}

// mayBeCached reports whether a raw tools/list result carries a ttlMs that
// is not zero, null or negative.
func mayBeCached(raw []byte) bool {
	// A key decodes to "ttlMs" only as those bytes or with a \u escape.
	if !bytes.Contains(raw, []byte("ttlMs")) && !bytes.Contains(raw, []byte(`\u`)) {
		return false
	}
	var result struct {
		TTL json.RawMessage `json:"ttlMs"`
	}
	if !decode(raw, &result) {
		return false
	}
	ttl := result.TTL
	return len(ttl) > 0 && ttl[0] != '-' && ttl[0] != 'n' && strings.Trim(string(ttl), "0.eE+") != ""
}

func (c *Conn) page(cursor string) keptPage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages[cursor]
}

// validator accepts or refuses entries across the pages of one listing.
type validator struct {
	listing  Listing
	accepted map[string]bool
	buf      []byte    // the schema being encoded
	canon    canon     // reads a stand-in's schema from the entry
	reads    []rawTool // the entries of the page being walked, as read
	arena    []byte    // holds the accepted schemas
}

func newValidator() *validator {
	return &validator{accepted: map[string]bool{}}
}

func (v *validator) refuse(name, reason string) {
	v.listing.Refused = append(v.listing.Refused, Refusal{Name: text.Truncate(name, maxRefusalName), Reason: reason})
}

// page walks the raw entries of one page alongside the SDK's decoded ones.
// The SDK's list is the raw list minus the entries it dropped and, when
// raw.took, minus the taken ones (rawTool.taken), which are decoded here;
// drops maps the names it logged to why. The error says the SDK would
// have failed the page on a taken entry.
func (v *validator) page(tools []*sdk.Tool, raw keptPage, drops map[string]string) error {
	if len(v.accepted) == 0 {
		v.accepted = make(map[string]bool, len(tools))
	}
	entries, ok := rawEntries(raw.result)
	if !ok {
		v.listing.Tools = slices.Grow(v.listing.Tools, len(tools))
		for _, t := range tools {
			v.consider(t, nil)
		}
		return nil
	}
	v.listing.Tools = slices.Grow(v.listing.Tools, len(entries))
	reads := slices.Grow(v.reads[:0], len(entries))
	toDrop := -len(tools)
	for _, e := range entries {
		var t rawTool
		if !isNull(e) {
			t = readTool(e)
			if !raw.took || !t.taken() {
				toDrop++
			}
		}
		reads = append(reads, t)
	}
	defer func() { clear(reads); v.reads = reads[:0] }()
	j := 0
	for i, e := range entries {
		t := &reads[i]
		switch {
		case isNull(e):
			v.refuse("", reasonNullEntry)
			continue
		case raw.took && t.taken():
			decoded, ok := sdkTool(e, *t)
			if !ok {
				return fmt.Errorf("entry %d does not decode as go-sdk decodes a tool", i)
			}
			v.consider(decoded, t)
			continue
		}
		if toDrop > 0 {
			name := t.name()
			if j >= len(tools) || tools[j] == nil || tools[j].Name != name {
				why, ok := drops[name]
				if !ok {
					why = "no reason logged"
				}
				v.refuse(name, reasonSDK+why)
				toDrop--
				continue
			}
		}
		if j < len(tools) {
			v.consider(tools[j], t)
			j++
		}
	}
	for ; j < len(tools); j++ {
		v.consider(tools[j], nil)
	}
	return nil
}

func isNull(e []byte) bool { return string(e) == "null" }

// consider accepts or refuses t, the SDK's decoding of an entry, given
// entry as read (nil when there is none; it is ignored unless it is an
// object named as t is). Where the SDK holds an empty object, which is
// what it makes of a stand-in (sdkTool), the input schema is decoded from
// the entry.
func (v *validator) consider(t *sdk.Tool, entry *rawTool) {
	if t == nil {
		v.refuse("", reasonNullEntry)
		return
	}
	if !validToolName(t.Name) {
		v.refuse(t.Name, reasonName)
		return
	}
	if v.accepted[t.Name] {
		v.refuse(t.Name, reasonDuplicate)
		return
	}
	var raw *rawTool // the entry as read, when it is t's
	if entry != nil && entry.object && entry.hasName(t.Name) {
		raw = entry
	}
	schema, reason := v.inputSchema(t, raw)
	if reason != "" {
		v.refuse(t.Name, reason)
		return
	}
	tool := Tool{Name: t.Name, Description: t.Description, InputSchema: schema}
	if reason := v.fill(&tool, t, raw); reason != "" {
		v.refuse(t.Name, reason)
		return
	}
	v.accepted[t.Name] = true
	v.listing.Tools = append(v.listing.Tools, tool)
}

// inputSchema returns t's input schema as json.Marshal writes it, or why
// the entry is refused. Where the SDK holds an empty object, which is what
// it makes of a stand-in (slimToolsList), the schema is read from raw, the
// entry: canonically when canon reads it, decoded and re-marshaled when
// not.
func (v *validator) inputSchema(t *sdk.Tool, raw *rawTool) (json.RawMessage, string) {
	decoded := t.InputSchema
	if m, ok := decoded.(map[string]any); ok && len(m) == 0 && raw != nil && raw.InputSchema.raw != nil {
		schema := raw.InputSchema.raw
		if decodedCost(schema) > MaxDecodedCost { // the SDK never decoded it: bound what this decoding may build
			return nil, reasonCost
		}
		if plain(map[string]any(t.Meta), 0) && plain(t.OutputSchema, 0) {
			if buf, object, ok := v.canon.appendCanonical(v.buf[:0], schema); ok {
				if v.buf = buf; !object {
					return nil, reasonSchema
				}
				return v.keep(buf), ""
			}
		}
		decoded = nil
		if !decode(schema, &decoded) { // as the SDK decodes a schema; encoding/json says why not
			decoded = nil
			if err := json.Unmarshal(schema, &decoded); err != nil {
				return nil, reasonMarshal + err.Error()
			}
		}
	}
	schema, err := v.remarshalSchema(t, decoded)
	if err != nil {
		return nil, reasonMarshal + err.Error()
	}
	if !objectSchema(decoded, schema) {
		return nil, reasonSchema
	}
	return schema, ""
}

// validToolName reports whether name is a tool name the MCP specification
// admits: 1-128 bytes of a-z A-Z 0-9 _ . -.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// arenaChunk is the size of the blocks accepted schemas are copied into.
const arenaChunk = 8 << 10

// remarshalSchema returns json.Marshal(schema), or the error json.Marshal
// reports for t with schema as its input schema. Values decoded from JSON
// cannot fail (TestToolFieldsThatCanFailToMarshal) and are encoded by
// segmentio, which writes the same bytes (FuzzRemarshalSchema) without
// reflecting over t.
func (v *validator) remarshalSchema(t *sdk.Tool, schema any) (json.RawMessage, error) {
	if plain(map[string]any(t.Meta), 0) && plain(t.OutputSchema, 0) && plain(schema, 0) {
		var err error
		if v.buf, err = segjson.Append(v.buf[:0], schema, segjson.EscapeHTML|segjson.SortMapKeys); err == nil {
			return v.keep(v.buf), nil
		}
	}
	withSchema := *t
	withSchema.InputSchema = schema
	if _, err := json.Marshal(&withSchema); err != nil {
		return nil, err
	}
	return json.Marshal(schema)
}

// maxPlainDepth bounds the nesting plain follows; deeper values take
// json.Marshal's path, which detects cycles.
const maxPlainDepth = 1000

// plain reports whether v is built only of what a JSON decoder produces
// into an any (nil, bool, finite float64, string, []any, map[string]any),
// so that json.Marshal of it cannot fail.
func plain(v any, depth int) bool {
	if depth > maxPlainDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsInf(x, 0) && !math.IsNaN(x)
	case []any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// keep copies b into the arena and returns the copy, capped so that an
// append to it cannot reach its neighbour.
func (v *validator) keep(b []byte) json.RawMessage {
	if cap(v.arena)-len(v.arena) < len(b) {
		v.arena = make([]byte, 0, max(arenaChunk, len(b)))
	}
	start := len(v.arena)
	v.arena = append(v.arena, b...)
	return v.arena[start:len(v.arena):len(v.arena)]
}

// objectSchema reports whether the schema, marshaled as schema, decodes to
// a JSON object whose "type" is "object".
func objectSchema(decoded any, schema []byte) bool {
	if m, ok := decoded.(map[string]any); ok {
		switch typ := m["type"].(type) {
		case string:
			return typ == "object"
		case nil, bool, float64, []any, map[string]any:
			return false
		}
	}
	var obj map[string]any
	return json.Unmarshal(schema, &obj) == nil && obj != nil && obj["type"] == "object"
}
