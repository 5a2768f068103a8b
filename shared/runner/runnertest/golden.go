package runnertest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// Update, set by the -update test flag, rewrites golden files instead of
// comparing against them.
var Update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Golden compares got, marshaled as indented JSON, with the file at path,
// or writes it there when -update is set.
func Golden(tb testing.TB, path string, got any) {
	tb.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		tb.Fatalf("golden %s: %v", path, err)
	}
	b = append(b, '\n')
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("golden %s: %v (run go test -update to create it)", path, err)
	}
	if !bytes.Equal(want, b) {
		tb.Errorf("%s differs (-want +got):\n%s\nrun go test -update if the change is intended", path, cmp.Diff(string(want), string(b)))
	}
}

// Events runs every file matching pattern (sample events, such as
// "../../events/call-*.json") in a subtest named after the file, without
// ".json", inside a synctest bubble: run gets the file's bytes, and what
// it returns is compared with testdata/events/<name>.json (see Golden).
// No matching file fails t.
func Events(t *testing.T, pattern string, run func(t *testing.T, payload []byte) any) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no events match %s: %v", pattern, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				Golden(t, filepath.Join("testdata", "events", name+".json"), run(t, payload))
			})
		})
	}
}
