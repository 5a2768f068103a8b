package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// The moto test shares the binary's moto server.
func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

func hint(b bool) *bool { return &b }

// listing has dotted names (their model names are mapped), every optional
// field on some tool, and one refusal.
func listing() mcp.Listing {
	read := catalogtest.FullTool("files.read", "r") // read-only, output schema, meta
	write := catalogtest.Tool("files.write", "w")
	write.Annotations = &mcp.Annotations{ReadOnlyHint: hint(false), DestructiveHint: hint(true)}
	search := catalogtest.Tool("search", "s")
	search.Annotations = &mcp.Annotations{ReadOnlyHint: hint(true), OpenWorldHint: hint(true)}
	search.OutputSchema = json.RawMessage(`{"type":"object","properties":{"hits":{"type":"array"}}}`)
	del := catalogtest.Tool("admin.delete", "d")
	del.Annotations = &mcp.Annotations{DestructiveHint: hint(true)} // read-only hint absent
	hinted := catalogtest.Tool("admin.stats", "a")
	hinted.Annotations = &mcp.Annotations{} // present, no hints
	return mcp.Listing{
		Tools:   []mcp.Tool{read, write, search, del, hinted, catalogtest.Tool("echo", "e")},
		Refused: []mcp.Refusal{{Name: "bad tool", Reason: "invalid tool name"}},
	}
}

// newDir returns a directory store holding listing as "main", with a
// failure recorded after it, and "failed", which only ever failed.
func newDir(t *testing.T) (string, *catalog.Dir) {
	t.Helper()
	root := t.TempDir()
	s, err := catalog.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	d := catalogtest.Discover(listing(), 0)
	d.ServerDiscovery = `{"serverInfo":{"name":"fixture"}}`
	catalogtest.MustPut(t, s, "main", d)
	ctx := context.Background()
	f := catalog.Failure{ErrorType: "mcp_connection_failed_error", Message: "dial: refused", At: catalogtest.T0.Add(time.Hour)}
	for _, id := range []string{"main", "failed"} {
		if err := s.RecordFailure(ctx, id, f); err != nil {
			t.Fatal(err)
		}
	}
	return root, s
}

// cmd runs the command with env as its environment and returns the exit
// status, stdout and stderr.
func cmd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return env[k] })
	return code, stdout.String(), stderr.String()
}

// mustRun runs the command and fails unless it exits 0.
func mustRun(t *testing.T, args ...string) []byte {
	t.Helper()
	code, stdout, stderr := cmd(t, nil, args...)
	if code != exitOK {
		t.Fatalf("%q: exit %d, stderr %q", args, code, stderr)
	}
	return []byte(stdout)
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value in %s", b)
	}
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// checkGet checks get's output against the catalog s holds under id.
func checkGet(t *testing.T, out []byte, s catalog.Store, id string) {
	t.Helper()
	want := catalogtest.MustGet(t, s, id)

	var raw map[string]any
	decode(t, out, &raw)
	wantKeys := []string{"checked_at", "content_hash", "discovered_at", "id", "last_failure", "protocol_version",
		"refused", "server", "tool_count", "tools", "version"}
	if diff := cmp.Diff(wantKeys, keys(raw)); diff != "" {
		t.Errorf("get keys (-want +got):\n%s", diff)
	}

	var got struct {
		ID              string `json:"id"`
		Version         string `json:"version"`
		ProtocolVersion string `json:"protocol_version"`
		Server          struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"server"`
		ContentHash  string        `json:"content_hash"`
		DiscoveredAt time.Time     `json:"discovered_at"`
		CheckedAt    time.Time     `json:"checked_at"`
		ToolCount    int           `json:"tool_count"`
		Refused      []mcp.Refusal `json:"refused"`
		LastFailure  struct {
			ErrorType string    `json:"error_type"`
			Message   string    `json:"message"`
			At        time.Time `json:"at"`
		} `json:"last_failure"`
		Tools []mcp.Tool `json:"tools"`
	}
	decode(t, out, &got)
	head := []any{got.ID, got.Version, got.ProtocolVersion, got.Server.Name, got.Server.Version, got.ContentHash,
		got.DiscoveredAt.Equal(want.DiscoveredAt), got.CheckedAt.Equal(want.CheckedAt), got.ToolCount,
		got.LastFailure.ErrorType, got.LastFailure.Message, got.LastFailure.At.Equal(want.LastFailure.At)}
	wantHead := []any{id, want.Version, "2025-11-25", "fixture", "1.0.0", want.ContentHash, true, true, len(listing().Tools),
		"mcp_connection_failed_error", "dial: refused", true}
	if diff := cmp.Diff(wantHead, head); diff != "" {
		t.Errorf("get head (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(listing().Refused, got.Refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	// Every stored field, schemas as JSON values; compact them to compare
	// with the store's bytes.
	for i := range got.Tools {
		compact(t, &got.Tools[i])
	}
	if diff := cmp.Diff(want.Tools, got.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func compact(t *testing.T, tool *mcp.Tool) {
	t.Helper()
	for _, m := range []*json.RawMessage{&tool.InputSchema, &tool.OutputSchema, &tool.Meta} {
		if *m == nil {
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, *m); err != nil {
			t.Fatal(err)
		}
		*m = b.Bytes()
	}
	if a := tool.Annotations; a != nil && a.Other != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, a.Other); err != nil {
			t.Fatal(err)
		}
		a.Other = b.Bytes()
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	root, s := newDir(t)
	out := mustRun(t, "get", "--dir", root, "main")
	checkGet(t, out, s, "main")

	var raw struct {
		Tools []map[string]any `json:"tools"`
	}
	decode(t, out, &raw)
	full := raw.Tools[0]
	wantKeys := []string{"annotations", "description", "input_schema", "meta", "model_name", "name", "output_schema", "title"}
	if diff := cmp.Diff(wantKeys, keys(full)); diff != "" {
		t.Errorf("keys of a tool with every field (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"destructive_hint", "other", "read_only_hint"}, keys(full["annotations"].(map[string]any))); diff != "" {
		t.Errorf("annotation keys (-want +got):\n%s", diff)
	}
	if _, ok := full["input_schema"].(map[string]any); !ok {
		t.Errorf("input_schema = %T, want a JSON object", full["input_schema"])
	}
	if got, want := full["model_name"], catalogtest.MappedName("files.read", 12); got != want {
		t.Errorf("model_name of files.read = %v, want %s", got, want)
	}
	if diff := cmp.Diff([]string{"description", "input_schema", "model_name", "name"}, keys(raw.Tools[5])); diff != "" {
		t.Errorf("keys of a bare tool (-want +got):\n%s", diff)
	}
	if bytes.Contains(out, []byte("server_discovery")) || bytes.Contains(out, []byte("serverInfo")) {
		t.Errorf("get prints the server's discovery record:\n%s", out)
	}
	if !bytes.Contains(out, []byte(`"<&>r"`)) {
		t.Errorf("get escapes <, > or &:\n%s", out)
	}
}

// TestGetOnlyFailure: a catalog with only a failure has no version, no
// times and no tools.
func TestGetOnlyFailure(t *testing.T) {
	t.Parallel()
	root, _ := newDir(t)
	var raw map[string]any
	decode(t, mustRun(t, "get", "--dir", root, "failed"), &raw)
	want := map[string]any{
		"id": "failed", "version": "", "protocol_version": "", "server": map[string]any{"name": "", "version": ""},
		"content_hash": "", "tool_count": 0.0, "refused": []any{}, "tools": []any{},
		"last_failure": map[string]any{"error_type": "mcp_connection_failed_error", "message": "dial: refused", "at": "2026-11-29T13:00:00Z"},
	}
	if diff := cmp.Diff(want, raw); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
}

func TestTools(t *testing.T) {
	t.Parallel()
	root, s := newDir(t)
	c := catalogtest.MustGet(t, s, "main")
	byModel := map[string]mcp.Tool{}
	for _, tool := range c.Tools {
		byModel[tool.ModelName] = tool
	}
	all := []string{"files.read", "files.write", "search", "admin.delete", "admin.stats", "echo"}
	tests := []struct {
		name  string
		flags []string
		want  []string // server names, in listing order
	}{
		{"no filter", nil, all},
		{"format given", []string{"--format", "anthropic"}, all},
		{"allow", []string{"--allow", "files.*"}, []string{"files.read", "files.write"}},
		{"allow twice", []string{"--allow", "files.*", "-allow", "echo"}, []string{"files.read", "files.write", "echo"}},
		{"allow by model name matches nothing", []string{"--allow", "files_read_*"}, nil},
		{"allow exact", []string{"--allow", "search"}, []string{"search"}},
		{"deny", []string{"--deny", "admin.*"}, []string{"files.read", "files.write", "search", "echo"}},
		{"deny twice", []string{"--deny", "admin.*", "--deny", "*.write"}, []string{"files.read", "search", "echo"}},
		{"allow and deny", []string{"--allow", "files.*", "--allow", "admin.*", "--deny", "*.delete"}, []string{"files.read", "files.write", "admin.stats"}},
		{"deny wins", []string{"--allow", "echo", "--deny", "ech?"}, nil},
		{"read-only", []string{"--read-only"}, []string{"files.read", "search"}}, // false, absent and no hints are dropped
		{"read-only and allow", []string{"--read-only", "--allow", "files.*"}, []string{"files.read"}},
		{"read-only and deny", []string{"--read-only", "--deny", "search"}, []string{"files.read"}},
		{"character class", []string{"--allow", "[ae]*"}, []string{"admin.delete", "admin.stats", "echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := mustRun(t, append(append([]string{"tools", "--dir", root}, tt.flags...), "main")...)
			var raw []map[string]any
			decode(t, out, &raw)
			var got []string
			for _, r := range raw {
				if diff := cmp.Diff([]string{"description", "input_schema", "name"}, keys(r)); diff != "" {
					t.Errorf("keys (-want +got):\n%s", diff)
				}
				tool, ok := byModel[r["name"].(string)]
				if !ok {
					t.Fatalf("name %v is no tool's model name", r["name"])
				}
				got = append(got, tool.Name)
				if r["description"] != tool.Description {
					t.Errorf("%s: description %v, want %q", tool.Name, r["description"], tool.Description)
				}
				schema, _ := json.Marshal(r["input_schema"])
				if !jsonEqual(t, schema, tool.InputSchema) {
					t.Errorf("%s: input_schema %s, want %s", tool.Name, schema, tool.InputSchema)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 && strings.TrimSpace(string(out)) != "[]" {
				t.Errorf("no tools kept: printed %s, want []", out)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return cmp.Equal(x, y)
}

// TestStoreFromEnvironment: without flags the command reads the functions'
// variables; a flag wins over them.
func TestStoreFromEnvironment(t *testing.T) {
	t.Parallel()
	root, _ := newDir(t)
	code, out, stderr := cmd(t, map[string]string{"MCPFN_CATALOG_DIR": root}, "get", "main")
	if code != exitOK || !strings.Contains(out, `"id": "main"`) {
		t.Errorf("get with MCPFN_CATALOG_DIR: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, _, stderr = cmd(t, map[string]string{"MCPFN_CATALOG_TABLE": "unused"}, "get", "--dir", root, "main")
	if code != exitOK {
		t.Errorf("--dir with MCPFN_CATALOG_TABLE set: exit %d, stderr %q", code, stderr)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	root, _ := newDir(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a substring of stderr
	}{
		{"no command", nil, exitUsage, "want a command"},
		{"unknown command", []string{"lsit"}, exitUsage, `unknown command "lsit"`},
		{"changes of a catalog that only failed", []string{"changes", "--dir", root, "failed"}, exitFail, "has no stored version"},
		{"help", []string{"help"}, exitOK, ""},
		{"no id", []string{"get", "--dir", root}, exitUsage, "want a catalog ID"},
		{"two ids", []string{"get", "--dir", root, "main", "failed"}, exitUsage, "want one catalog ID"},
		{"flag after the id", []string{"tools", "--dir", root, "main", "--read-only"}, exitUsage, "flags come before the ID"},
		{"unknown flag", []string{"get", "--format", "anthropic", "--dir", root, "main"}, exitUsage, "not defined: -format"},
		{"other format", []string{"tools", "--format", "openai", "--dir", root, "main"}, exitUsage, `--format "openai": the only format is anthropic`},
		{"bad glob", []string{"tools", "--allow", "[", "--dir", root, "main"}, exitUsage, "syntax error in pattern"},
		{"bad deny glob", []string{"tools", "--deny", "a[", "--dir", root, "main"}, exitUsage, "syntax error in pattern"},
		{"empty id", []string{"get", "--dir", root, ""}, exitUsage, "invalid catalog id"},
		{"id too long", []string{"get", "--dir", root, strings.Repeat("x", catalog.MaxIDBytes+1)}, exitUsage, "invalid catalog id"},
		{"table and dir", []string{"get", "--table", "t", "--dir", root, "main"}, exitUsage, "not both"},
		{"no store", []string{"get", "main"}, exitUsage, "no store"},
		{"endpoint without table", []string{"get", "--endpoint", "http://127.0.0.1:1", "--dir", root, "main"}, exitUsage, "--endpoint needs --table"},
		{"endpoint not a URL", []string{"get", "--table", "t", "--endpoint", "127.0.0.1:1", "main"}, exitUsage, "want an http or https URL"},
		{"zero timeout", []string{"get", "--timeout", "0s", "--dir", root, "main"}, exitUsage, "--timeout"},
		{"not found", []string{"get", "--dir", root, "nobody"}, exitFail, `get: catalog "nobody" not found`},
		{"tools not found", []string{"tools", "--dir", root, "nobody"}, exitFail, `tools: catalog "nobody" not found`},
		{"missing directory", []string{"get", "--dir", filepath.Join(root, "absent"), "main"}, exitStore, "no such file or directory"},
		{"directory is a file", []string{"get", "--dir", file, "main"}, exitStore, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := cmd(t, nil, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if code != exitOK && stdout != "" {
				t.Errorf("stdout %q on failure, want nothing", stdout)
			}
			if code != exitOK && strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want exactly one line", stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "absent")); err == nil {
		t.Error("a missing --dir was created")
	}
}

// TestChanges prints the current version's diff in the discover result's
// shape: after a second discovery that adds one tool, drops one and
// changes one, exactly those.
func TestChanges(t *testing.T) {
	root, s := newDir(t)
	var first struct {
		Added   []string `json:"added"`
		Removed []string `json:"removed"`
		Changed []string `json:"changed"`
		Count   int      `json:"added_count"`
	}
	decode(t, mustRun(t, "changes", "--dir", root, "main"), &first)
	if len(first.Added) != len(listing().Tools) || first.Count != len(first.Added) || len(first.Removed)+len(first.Changed) != 0 {
		t.Errorf("first version's changes %+v, want every tool added", first)
	}

	l := listing()
	l.Tools[0].Description = "changed"
	l.Tools = append(l.Tools[:len(l.Tools)-1], catalogtest.Tool("fresh", "f")) // drops echo
	catalogtest.MustPut(t, s, "main", catalogtest.Discover(l, time.Hour))
	var got map[string]any
	decode(t, mustRun(t, "changes", "--dir", root, "main"), &got)
	want := map[string]any{
		"added": []any{"fresh"}, "removed": []any{"echo"}, "changed": []any{l.Tools[0].Name},
		"added_count": 1.0, "removed_count": 1.0, "changed_count": 1.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
