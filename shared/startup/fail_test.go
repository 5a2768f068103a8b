package startup_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/startup"
)

func TestFail(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantVars []any // nil: no variables key
	}{
		{name: "configuration error", err: startup.CheckNames([]string{"MCPFN_CATALOG_TABEL=catalog"}), wantVars: []any{"MCPFN_CATALOG_TABEL"}},
		{name: "other error", err: errors.New("AWS configuration: no profile")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			startup.Fail(&out, "discover", tt.err)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 1 {
				t.Fatalf("Fail wrote %d lines, want 1:\n%s", len(lines), out.String())
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
				t.Fatalf("line %q: %v", lines[0], err)
			}
			if _, ok := got["time"]; !ok {
				t.Errorf("line %q has no time", lines[0])
			}
			delete(got, "time")
			want := map[string]any{
				"level": "ERROR", "msg": tt.err.Error(), "error_type": "configuration_error",
				"service": "discover", "function": "discover", "cold_start": true,
			}
			if tt.wantVars != nil {
				want["variables"] = tt.wantVars
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLocalStore(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr bool
	}{
		{name: "outside Lambda"},
		{name: "inside Lambda", env: map[string]string{startup.EnvFunctionName: "mcpfn-call", startup.EnvCatalogTable: "catalog"}, wantErr: true},
		{name: "local run in the emulator", env: map[string]string{startup.EnvFunctionName: "call", startup.EnvLocal: "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := startup.LoadSettings(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			err = s.LocalStore(startup.EnvCallsTable, "an in-memory ledger loses at-most-once")
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("LocalStore = %v, want nil", err)
				}
				return
			}
			ce, ok := errors.AsType[*startup.ConfigError](err)
			if !ok || !cmp.Equal(ce.Variables, []string{startup.EnvCallsTable}) {
				t.Fatalf("LocalStore = %#v, want a *ConfigError naming %s", err, startup.EnvCallsTable)
			}
			for _, s := range []string{"configuration: ", startup.EnvCallsTable, startup.EnvLocal + "=1", "at-most-once"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}
