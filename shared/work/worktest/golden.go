package worktest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

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
