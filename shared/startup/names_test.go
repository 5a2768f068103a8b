package startup

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckNames(t *testing.T) {
	tests := []struct {
		name      string
		environ   []string
		wantVars  []string // the variables the error names; none: no error
		wantInMsg []string
	}{
		{name: "every known setting", environ: func() []string {
			var kv []string
			for _, k := range KnownSettings {
				kv = append(kv, k+"=x")
			}
			return kv
		}()},
		{name: "other variables", environ: []string{"PATH=/bin", "AWS_REGION=us-east-1", "MCPFN", "XMCPFN_CATALOG_TABEL=1"}},
		{name: "transposed letters", environ: []string{"MCPFN_CATALOG_TABEL=catalog"}, wantVars: []string{"MCPFN_CATALOG_TABEL"},
			wantInMsg: []string{"MCPFN_CATALOG_TABEL: unknown setting; did you mean MCPFN_CATALOG_TABLE?"}},
		{name: "missing letter", environ: []string{"MCPFN_CALS_TABLE=calls"}, wantVars: []string{"MCPFN_CALS_TABLE"},
			wantInMsg: []string{"did you mean MCPFN_CALLS_TABLE?"}},
		{name: "lower case", environ: []string{"mcpfn_reserve=5s", "MCPFN_reserve=5s"}, wantVars: []string{"MCPFN_reserve"},
			wantInMsg: []string{"MCPFN_reserve: unknown setting; did you mean MCPFN_RESERVE?"}},
		{name: "singular for plural", environ: []string{"MCPFN_SECRET_PREFIX=team/"}, wantVars: []string{"MCPFN_SECRET_PREFIX"},
			wantInMsg: []string{"did you mean MCPFN_SECRETS_PREFIX?"}},
		{name: "allow-list misspelt", environ: []string{"MCPFN_EGRESS_ALLOWED=10.0.0.0/8:443"}, wantVars: []string{"MCPFN_EGRESS_ALLOWED"},
			wantInMsg: []string{"did you mean MCPFN_EGRESS_ALLOW?"}},
		{name: "nothing near", environ: []string{"MCPFN_TIMEOUT=30s"}, wantVars: []string{"MCPFN_TIMEOUT"},
			wantInMsg: []string{"MCPFN_TIMEOUT: unknown setting (docs/operations.md lists the settings)"}},
		{name: "a test's variable", environ: []string{"MCPFN_INTEROP=1"}, wantVars: []string{"MCPFN_INTEROP"}},
		{name: "empty value counts", environ: []string{"MCPFN_LOCL="}, wantVars: []string{"MCPFN_LOCL"}, wantInMsg: []string{"did you mean MCPFN_LOCAL?"}},
		{name: "each unknown name once", environ: []string{"MCPFN_RESERV=1s", "MCPFN_DLQ=x", "MCPFN_RESERV=2s"},
			wantVars: []string{"MCPFN_RESERV", "MCPFN_DLQ"}, wantInMsg: []string{"did you mean MCPFN_RESERVE?", "MCPFN_DLQ: unknown setting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNames(tt.environ)
			if len(tt.wantVars) == 0 {
				if err != nil {
					t.Fatalf("CheckNames = %v, want nil", err)
				}
				return
			}
			ce, ok := errors.AsType[*ConfigError](err)
			if !ok {
				t.Fatalf("CheckNames = %v, want a *ConfigError", err)
			}
			if diff := cmp.Diff(tt.wantVars, ce.Variables); diff != "" {
				t.Errorf("Variables (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(err.Error(), "configuration: ") {
				t.Errorf("error %q does not start with configuration: ", err)
			}
			for _, s := range tt.wantInMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"ab", "ba", 1}, // one swap
		{"TABEL", "TABLE", 1},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
