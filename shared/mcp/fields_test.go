package mcp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// serveToolsPage answers every tools/list with the one result page, as
// JSON or as an SSE stream of one event.
func serveToolsPage(t *testing.T, page string, sse bool) *scripted {
	t.Helper()
	return serveScripted(t, &scripted{list: func(w http.ResponseWriter, id json.RawMessage, cursor string) {
		msg := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + page + `}`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: " + msg + "\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(msg))
	}})
}

// toolsPage joins entries into a tools/list result.
func toolsPage(entries ...string) string {
	return `{"tools":[` + strings.Join(entries, ",") + `]}`
}

func ptr[T any](v T) *T { return &v }

var answers = []struct {
	name string
	sse  bool
}{{"JSON", false}, {"SSE", true}}

// TestListToolsOptionalFields: title, annotations, outputSchema and _meta,
// present, absent and null, in a JSON and an SSE answer alike.
func TestListToolsOptionalFields(t *testing.T) {
	page := toolsPage(
		`{"name":"full","title":"Full <tool>","description":"d","inputSchema":{"type":"object"},
		  "annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false,"title":"Annotated","x-vendor":{"z":1,"a":[true,null]}},
		  "outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]},
		  "_meta":{"io.example/b":2,"io.example/a":"<x>"}}`,
		`{"name":"absent","inputSchema":{"type":"object"}}`,
		`{"name":"nulls","title":null,"inputSchema":{"type":"object"},"annotations":null,"outputSchema":null,"_meta":null}`,
		`{"name":"false_hints","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"idempotentHint":false}}`,
		`{"name":"null_hints","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":null,"openWorldHint":null}}`,
		`{"name":"empty","inputSchema":{"type":"object"},"annotations":{},"outputSchema":{},"_meta":{}}`,
		`{"name":"other_only","inputSchema":{"type":"object"},"annotations":{"title":"T","ReadOnlyHint":"not a hint: keys match exactly"}}`,
	)
	page = strings.ReplaceAll(page, "\n", "")
	obj := json.RawMessage(`{"type":"object"}`)
	want := []Tool{
		{
			Name: "full", Title: "Full <tool>", Description: "d", InputSchema: obj,
			Annotations: &Annotations{
				ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(false),
				Other: json.RawMessage(`{"title":"Annotated","x-vendor":{"a":[true,null],"z":1}}`),
			},
			OutputSchema: json.RawMessage(`{"properties":{"sum":{"type":"number"}},"required":["sum"],"type":"object"}`),
			Meta:         json.RawMessage(`{"io.example/a":"\u003cx\u003e","io.example/b":2}`),
		},
		{Name: "absent", InputSchema: obj},
		{Name: "nulls", InputSchema: obj},
		{Name: "false_hints", InputSchema: obj, Annotations: &Annotations{ReadOnlyHint: ptr(false), IdempotentHint: ptr(false)}},
		{Name: "null_hints", InputSchema: obj},
		{Name: "empty", InputSchema: obj, OutputSchema: json.RawMessage(`{}`)},
		{Name: "other_only", InputSchema: obj, Annotations: &Annotations{Other: json.RawMessage(`{"ReadOnlyHint":"not a hint: keys match exactly","title":"T"}`)}},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			l, _, err := listFrom(t, serveToolsPage(t, page, a.sse))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Listing{Tools: want}, l, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("listing (-want +got):\n%s", diff)
			}
			if b, err := json.Marshal(l.Tools[0]); err != nil || !json.Valid(b) {
				t.Errorf("json.Marshal(full) = %s, %v", b, err)
			}
		})
	}
}

// TestListToolsRefusesUnusableOptionalFields: each oversized or malformed
// field the SDK decodes refuses its own entry with the reason, in a JSON
// and an SSE answer alike; the rest of the listing is kept.
func TestListToolsRefusesUnusableOptionalFields(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	str := func(n int) string { return strings.Repeat("x", n) }
	entry := func(name, fields string) string {
		return `{"name":"` + name + `","inputSchema":{"type":"object"}` + fields + `}`
	}
	page := toolsPage(
		entry("first", ""),
		entry("title_at_bound", `,"title":"`+str(maxTitleBytes)+`"`),
		entry("title_too_long", `,"title":"`+str(maxTitleBytes+1)+`"`),
		entry("annotations_too_big", `,"annotations":{"x":"`+str(maxAnnotationsBytes)+`"}`),
		entry("annotations_escape_past_bound", `,"annotations":{"x":"`+strings.Repeat("<", maxAnnotationsBytes/5)+`"}`), // 3.3 KiB raw, 19.7 KiB escaped
		entry("output_schema_string", `,"outputSchema":"object"`),
		entry("output_schema_array", `,"outputSchema":[{"type":"object"}]`),
		entry("output_schema_boolean", `,"outputSchema":true`),
		entry("output_schema_too_big", `,"outputSchema":{"type":"object","description":"`+str(maxOutputSchemaBytes)+`"}`),
		entry("output_schema_at_bound", `,"outputSchema":{"description":"`+str(maxOutputSchemaBytes-len(`{"description":""}`))+`"}`),
		entry("meta_too_big", `,"_meta":{"x":"`+str(maxMetaBytes)+`"}`),
		entry("last", `,"title":"Last"`),
	)
	wantTools := []Tool{
		{Name: "first", InputSchema: obj},
		{Name: "title_at_bound", Title: str(maxTitleBytes), InputSchema: obj},
		{Name: "output_schema_at_bound", InputSchema: obj, OutputSchema: json.RawMessage(`{"description":"` + str(maxOutputSchemaBytes-len(`{"description":""}`)) + `"}`)},
		{Name: "last", Title: "Last", InputSchema: obj},
	}
	wantRefused := []Refusal{
		{"title_too_long", reasonTitleSize},
		{"annotations_too_big", reasonAnnotationsSize},
		{"annotations_escape_past_bound", reasonAnnotationsSize},
		{"output_schema_string", reasonOutputSchema},
		{"output_schema_array", reasonOutputSchema},
		{"output_schema_boolean", reasonOutputSchema},
		{"output_schema_too_big", reasonOutputSchemaSize},
		{"meta_too_big", reasonMetaSize},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			l, _, err := listFrom(t, serveToolsPage(t, page, a.sse))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Listing{Tools: wantTools, Refused: wantRefused}, l, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("listing (-want +got):\n%s", diff)
			}
		})
	}
}

// illTyped are entries whose title, annotations or _meta go-sdk's decoder
// refuses, which fails the whole page it is in.
var illTyped = []struct {
	entry  string
	reason string
}{
	{`{"name":"title_number","title":5,"inputSchema":{"type":"object"}}`, reasonTitle},
	{`{"name":"title_object","title":{"en":"x"},"inputSchema":{"type":"object"}}`, reasonTitle},
	{`{"name":"title_twice","title":5,"title":"fine","inputSchema":{"type":"object"}}`, ""}, // the last wins, as in a map
	{`{"name":"annotations_string","annotations":"readOnly","inputSchema":{"type":"object"}}`, reasonAnnotations},
	{`{"name":"annotations_array","annotations":[],"inputSchema":{"type":"object"}}`, reasonAnnotations},
	{`{"name":"hint_string","annotations":{"readOnlyHint":"yes"},"inputSchema":{"type":"object"}}`, reasonHint},
	{`{"name":"hint_number","annotations":{"destructiveHint":0},"inputSchema":{"type":"object"}}`, reasonHint},
	{`{"name":"hint_object","annotations":{"idempotentHint":{}},"inputSchema":{"type":"object"}}`, reasonHint},
	{`{"name":"hint_array","annotations":{"openWorldHint":[true]},"inputSchema":{"type":"object"}}`, reasonHint},
	{`{"name":"annotations_title","annotations":{"title":1},"inputSchema":{"type":"object"}}`, reasonAnnotationsTitle},
	{`{"name":"meta_array","_meta":[],"inputSchema":{"type":"object"}}`, reasonMeta},
	{`{"name":"meta_string","inputSchema":{"type":"object"},"_meta":"m"}`, reasonMeta},
}

// TestListToolsRefusesIllTypedOptionalFields: each entry whose field the
// SDK's decoder refuses is refused with the reason, in a JSON answer (the
// SDK gets that field null) and an SSE one (the page decoded again); the
// rest is kept.
func TestListToolsRefusesIllTypedOptionalFields(t *testing.T) {
	entries := []string{`{"name":"first","inputSchema":{"type":"object"}}`}
	var wantRefused []Refusal
	wantTools := []Tool{{Name: "first", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range illTyped {
		entries = append(entries, tc.entry)
		name := rawName([]byte(tc.entry))
		if tc.reason == "" {
			wantTools = append(wantTools, Tool{Name: name, Title: "fine", InputSchema: json.RawMessage(`{"type":"object"}`)})
		} else {
			wantRefused = append(wantRefused, Refusal{name, tc.reason})
		}
	}
	entries = append(entries, `{"name":"last","inputSchema":{"type":"object"}}`)
	wantTools = append(wantTools, Tool{Name: "last", InputSchema: json.RawMessage(`{"type":"object"}`)})

	for _, a := range answers {
		l, _, err := listFrom(t, serveToolsPage(t, toolsPage(entries...), a.sse))
		if err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if diff := cmp.Diff(Listing{Tools: wantTools, Refused: wantRefused}, l, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: listing (-want +got):\n%s", a.name, diff)
		}
	}
}

// TestSDKFailsPageOnIllTypedField pins why a JSON answer is repaired
// (sdkTakesTitle, sdkTakesAnnotations, sdkTakesMeta) and an SSE answer
// decoded again (redecode): go-sdk v1.8.0 fails a whole tools/list page
// on one entry's ill-typed title, annotations or _meta. Over SSE, ListTools
// then refuses that entry alone and keeps the rest.
func TestSDKFailsPageOnIllTypedField(t *testing.T) {
	for _, tc := range illTyped {
		if tc.reason == "" {
			continue
		}
		name := rawName([]byte(tc.entry))
		t.Run(name, func(t *testing.T) {
			page := toolsPage(tc.entry, `{"name":"ok","inputSchema":{"type":"object"}}`)
			s := serveToolsPage(t, page, true)
			if _, err := sdkSession(t, s.URL, nil).ListTools(testCtx(t, 5e9), nil); err == nil || !strings.Contains(err.Error(), "cannot unmarshal") {
				t.Errorf("SDK ListTools = %v, want a decoding error for the page", err)
			}
			l, _, err := listFrom(t, s)
			want := Listing{Tools: []Tool{{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}}, Refused: []Refusal{{name, tc.reason}}}
			if err != nil {
				t.Fatalf("ListTools over SSE: %v", err)
			}
			if diff := cmp.Diff(want, l, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("listing over SSE (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListToolsAcceptsTheSpecsNames: names of 1-128 of A-Za-z0-9_.-, as
// the MCP specification admits, over JSON and SSE.
func TestListToolsAcceptsTheSpecsNames(t *testing.T) {
	accepted := []string{"a", "files.read", ".", "v1.2-beta_3", strings.Repeat("n", 65), strings.Repeat("d.", 64)}
	refused := []string{strings.Repeat("n", 129), "a b", "a/b", "a:b", "caf\u00e9", "a\\u0000"}
	var entries []string
	var want Listing
	for _, n := range accepted {
		entries = append(entries, `{"name":"`+n+`","inputSchema":{"type":"object"}}`)
		want.Tools = append(want.Tools, Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	for _, n := range refused {
		entries = append(entries, `{"name":"`+n+`","inputSchema":{"type":"object"}}`)
		decoded, _ := stringValue([]byte(`"` + n + `"`))
		want.Refused = append(want.Refused, Refusal{decoded, reasonName})
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			l, _, err := listFrom(t, serveToolsPage(t, toolsPage(entries...), a.sse))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, l); diff != "" {
				t.Errorf("listing (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListToolsOptionalFieldsFromGoSDKServer lists the fixture's tools
// from a go-sdk server, which answers on SSE, in both eras.
func TestListToolsOptionalFieldsFromGoSDKServer(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run("stateless="+strconv.FormatBool(stateless), func(t *testing.T) {
			srv := mcptest.NewServer(t, mcptest.Options{Stateless: stateless})
			c := mustConnect(t, Config{URL: srv.URL, HTTPClient: srv.Client()})
			l, err := c.ListTools(testCtx(t, 10e9))
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]Tool{}
			for _, tool := range l.Tools {
				byName[tool.Name] = tool
			}
			if len(l.Refused) != 0 || len(l.Tools) != 10 {
				t.Fatalf("listing: %d tools, refused %v; want the fixture's 10 and none", len(l.Tools), l.Refused)
			}
			wantAdd := Tool{
				Name: "add", Title: "Add",
				Description: byName["add"].Description, InputSchema: byName["add"].InputSchema,
				OutputSchema: json.RawMessage(`{"properties":{"sum":{"type":"number"}},"required":["sum"],"type":"object"}`),
				Annotations: &Annotations{
					ReadOnlyHint: ptr(true), IdempotentHint: ptr(true), OpenWorldHint: ptr(false),
					Other: json.RawMessage(`{"title":"Add two numbers"}`),
				},
				Meta: json.RawMessage(`{"io.mcpfn.mcptest/kind":"arithmetic"}`),
			}
			if diff := cmp.Diff(wantAdd, byName["add"]); diff != "" {
				t.Errorf("add (-want +got):\n%s", diff)
			}
			// The SDK's server writes both bare-bool hints, false too.
			wantFail := &Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(false), IdempotentHint: ptr(false)}
			if diff := cmp.Diff(wantFail, byName["fail"].Annotations); diff != "" {
				t.Errorf("fail's annotations (-want +got):\n%s", diff)
			}
			if echo := byName["echo"]; echo.Title != "Echo" || echo.Annotations != nil || echo.OutputSchema != nil || echo.Meta != nil {
				t.Errorf("echo = %+v, want a title only", echo)
			}
		})
	}
}

// TestValidatorFillsFromTheSDKWithoutARawEntry: an entry the validator has
// no raw copy of takes what the SDK decoded; a false readOnlyHint or
// idempotentHint is indistinguishable from an absent one there.
func TestValidatorFillsFromTheSDKWithoutARawEntry(t *testing.T) {
	v := newValidator()
	v.consider(&sdk.Tool{
		Name: "t", Title: "T", InputSchema: map[string]any{"type": "object"},
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), Title: "A"},
		OutputSchema: map[string]any{"type": "object"},
		Meta:         sdk.Meta{"k": "v"},
	}, nil)
	v.consider(&sdk.Tool{Name: "u", InputSchema: map[string]any{"type": "object"}, Annotations: &sdk.ToolAnnotations{}}, nil)
	v.consider(&sdk.Tool{Name: "s", InputSchema: map[string]any{"type": "object"}, OutputSchema: "string"}, nil)
	want := Listing{
		Tools: []Tool{
			{
				Name: "t", Title: "T", InputSchema: json.RawMessage(`{"type":"object"}`),
				Annotations:  &Annotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), Other: json.RawMessage(`{"title":"A"}`)},
				OutputSchema: json.RawMessage(`{"type":"object"}`),
				Meta:         json.RawMessage(`{"k":"v"}`),
			},
			{Name: "u", InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
		Refused: []Refusal{{"s", reasonOutputSchema}},
	}
	if diff := cmp.Diff(want, v.listing); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
}

func TestOptionalFieldReasonsNameTheirBounds(t *testing.T) {
	for _, tc := range []struct {
		reason, field string
		bound         int
	}{
		{reasonTitleSize, "title", maxTitleBytes},
		{reasonAnnotationsSize, "annotations", maxAnnotationsBytes},
		{reasonOutputSchemaSize, "output_schema", maxOutputSchemaBytes},
		{reasonMetaSize, "meta", maxMetaBytes},
	} {
		if !strings.HasPrefix(tc.reason, tc.field+": ") || !strings.Contains(tc.reason, " "+strconv.Itoa(tc.bound)+" bytes") {
			t.Errorf("reason %q does not name %s and its bound %d", tc.reason, tc.field, tc.bound)
		}
	}
}

// TestSlimToolsListNullsWhatTheSDKsDecoderRefuses pins the repair of a
// JSON answer: in an entry the SDK is handed (one whose schema may carry an
// x-mcp-header annotation), every ill-typed occurrence becomes null, in
// place; a taken entry becomes null whole.
func TestSlimToolsListNullsWhatTheSDKsDecoderRefuses(t *testing.T) {
	const h = `"inputSchema":{"properties":{"q":{"x-mcp-header":"Q"}}}`
	msg := []byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":[` +
		`{"_meta":[1],"name":"a","title":5,` + h + `,"annotations":{"readOnlyHint":"y"}},` +
		`{"name":"b","title":"ok","title":[],` + h + `,"annotations":{"title":"t","x":[]},"_meta":{"k":1}},` +
		`{"name":"c","annotations":null,` + h + `,"title":null,"_meta":null},` +
		`{"name":"t","title":5,"inputSchema":{"type":"object"}}]}}`)
	want := `{"jsonrpc":"2.0","id":2,"result":{"tools":[` +
		`{"_meta":null,"name":"a","title":null,` + h + `,"annotations":null},` +
		`{"name":"b","title":"ok","title":null,` + h + `,"annotations":{"title":"t","x":[]},"_meta":{"k":1}},` +
		`{"name":"c","annotations":null,` + h + `,"title":null,"_meta":null},` +
		`null]}}`
	m, ok := readMessage(msg)
	if !ok {
		t.Fatal("readMessage failed")
	}
	if got, taken := slimToolsList(msg, m.result); string(got) != want || taken == 0 {
		t.Errorf("slimToolsList =\n%s, %d\nwant\n%s, a cost", got, taken, want)
	}
}

// TestSDKToolDecodesATakenEntryAsTheSDKWould: a taken entry is decoded
// with its replacements made (ill-typed title, annotations and _meta null,
// the schema a stand-in), and not at all where go-sdk would have failed
// its page: an ill-typed name or description, or icons.
func TestSDKToolDecodesATakenEntryAsTheSDKWould(t *testing.T) {
	deep := func(levels int) string {
		return `{"name":"d","inputSchema":{"type":"object"},"_meta":{"k":` + strings.Repeat("[", levels-2) + strings.Repeat("]", levels-2) + `}}`
	}
	for _, tc := range []struct {
		entry string
		ok    bool
	}{
		{`{"name":"a","title":5,"description":"d","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":"y"},"_meta":[1]}`, true},
		{`{"name":5,"inputSchema":{"type":"object"}}`, false},
		{`{"name":"a","description":[],"inputSchema":{"type":"object"}}`, false},
		{`{"name":"a","icons":{},"inputSchema":{"type":"object"}}`, false},
		{deep(1200), true},
	} {
		entry := []byte(tc.entry)
		raw := readTool(entry)
		if !raw.taken() {
			t.Fatalf("%.60s: not taken", tc.entry)
		}
		got, ok := sdkTool(entry, raw)
		if ok != tc.ok {
			t.Errorf("%.60s: decoded %t, want %t", tc.entry, ok, tc.ok)
			continue
		}
		if !ok || tc.entry[9] != 'a' {
			continue
		}
		// The SDK's decoding of the page with this entry as slimToolsList
		// would have left it, had it not been taken.
		var want sdk.Tool
		if err := json.Unmarshal([]byte(`{"name":"a","title":null,"description":"d","inputSchema":{},"annotations":null,"_meta":null}`), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("sdkTool (-want +got):\n%s", diff)
		}
	}
}
