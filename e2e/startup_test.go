package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/shared/rietest"
	"github.com/mcpfn/mcpfn/shared/runner"
)

// TestStartupRefusesConfiguration starts each real bootstrap under the RIE
// (which sets AWS_LAMBDA_FUNCTION_NAME, as Lambda does) with a
// configuration that cannot work, and invokes it: the init fails (the RIE
// answers 502; Lambda reports Runtime.ExitError), and the function printed
// exactly one JSON line, with error_type configuration_error, naming the
// variables.
func TestStartupRefusesConfiguration(t *testing.T) {
	const (
		table = "MCPFN_CATALOG_TABLE=catalog"
		calls = "MCPFN_CALLS_TABLE=calls"
		local = "MCPFN_LOCAL=1"
	)
	tests := []struct {
		name     string
		function string // "discover" or "call"
		timeout  time.Duration
		env      []string
		wantVars []string // the line's variables
		wantMsg  string   // in the line's msg and the error's
	}{
		{name: "misspelt setting", function: "discover", env: []string{"MCPFN_CATALOG_TABEL=catalog", local},
			wantVars: []string{"MCPFN_CATALOG_TABEL"}, wantMsg: "MCPFN_CATALOG_TABEL: unknown setting; did you mean MCPFN_CATALOG_TABLE?"},
		{name: "misspelt calls table", function: "call", env: []string{table, "MCPFN_CALS_TABLE=calls"},
			wantVars: []string{"MCPFN_CALS_TABLE"}, wantMsg: "did you mean MCPFN_CALLS_TABLE?"},
		{name: "unknown setting", function: "call", env: []string{table, calls, "MCPFN_TIMEOUT=30s"},
			wantVars: []string{"MCPFN_TIMEOUT"}, wantMsg: "MCPFN_TIMEOUT: unknown setting"},
		{name: "reserve longer than the operation timeout", function: "discover", timeout: time.Minute, env: []string{table, "MCPFN_RESERVE=20s", "MCPFN_OPERATION_TIMEOUT=10s"},
			wantVars: []string{"MCPFN_RESERVE", "MCPFN_OPERATION_TIMEOUT"}, wantMsg: "is longer than MCPFN_OPERATION_TIMEOUT=10s"},
		{name: "reserve leaves no budget", function: "discover", timeout: 5 * time.Second, env: []string{table, "MCPFN_RESERVE=4500ms"},
			wantVars: []string{"MCPFN_RESERVE", "AWS_LAMBDA_FUNCTION_TIMEOUT"}, wantMsg: "nothing would ever start"},
		{name: "operation timeout past the function timeout", function: "call", timeout: 10 * time.Second,
			env:      []string{table, calls, "MCPFN_RESERVE=2s", "MCPFN_OPERATION_TIMEOUT=8s"},
			wantVars: []string{"MCPFN_OPERATION_TIMEOUT", "MCPFN_RESERVE", "AWS_LAMBDA_FUNCTION_TIMEOUT"}, wantMsg: "could never run out"},
		{name: "catalog table and directory", function: "discover", env: []string{table, "MCPFN_CATALOG_DIR=/tmp/catalog", local},
			wantVars: []string{"MCPFN_CATALOG_TABLE", "MCPFN_CATALOG_DIR"}, wantMsg: "both MCPFN_CATALOG_TABLE and MCPFN_CATALOG_DIR are set"},
		{name: "directory store inside Lambda", function: "discover", env: []string{"MCPFN_CATALOG_DIR=/tmp/catalog"},
			wantVars: []string{"MCPFN_CATALOG_DIR"}, wantMsg: "MCPFN_LOCAL=1"},
		{name: "no catalog table inside Lambda", function: "call", env: []string{calls},
			wantVars: []string{"MCPFN_CATALOG_TABLE"}, wantMsg: "MCPFN_CATALOG_TABLE is not set inside Lambda"},
		{name: "in-memory ledger inside Lambda", function: "call", env: []string{table},
			wantVars: []string{"MCPFN_CALLS_TABLE"}, wantMsg: "MCPFN_CALLS_TABLE is not set inside Lambda"},
		{name: "local flag not 1", function: "discover", env: []string{table, "MCPFN_LOCAL=yes"},
			wantVars: []string{"MCPFN_LOCAL"}, wantMsg: `MCPFN_LOCAL="yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := startBootstrap(t, tt.function, tt.timeout, tt.env)
			resp, err := http.Post(f.URL(), "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The RIE answers a runtime that exited during init with a bare
			// 502; Lambda answers it with errorType Runtime.ExitError.
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("invocation answered %s %q, want 502 Bad Gateway (an init failure)", resp.Status, body)
			}
			if err := f.Stop(); err != nil { // waits for the output to be read
				t.Fatal(err)
			}
			line := configurationLine(t, f)
			if !strings.Contains(line.Msg, tt.wantMsg) {
				t.Errorf("msg %q does not contain %q", line.Msg, tt.wantMsg)
			}
			if !slices.Equal(line.Variables, tt.wantVars) {
				t.Errorf("variables %q, want %q", line.Variables, tt.wantVars)
			}
			if line.Level != "ERROR" || line.Service != tt.function || !line.ColdStart {
				t.Errorf("line %+v: want level ERROR, service %s, cold_start true", line, tt.function)
			}
		})
	}
}

// TestStartupLocalStores starts both bootstraps with the local stores and
// MCPFN_LOCAL=1, as make run does: the init passes, and an invalid event gets
// its wire error, not an init failure.
func TestStartupLocalStores(t *testing.T) {
	for _, fn := range []string{"discover", "call"} {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			f := startBootstrap(t, fn, 0, []string{"MCPFN_CATALOG_DIR=" + t.TempDir(), "MCPFN_LOCAL=1"})
			res := invoke(t, f, []byte(`{}`))
			if res.ErrorType != "invalid_request_error" {
				t.Errorf("invocation = %+v, want invalid_request_error", res)
			}
		})
	}
}

// startBootstrap starts the named function's bootstrap under the RIE with
// env only (no AWS endpoint: init opens no connection).
func startBootstrap(t *testing.T, function string, timeout time.Duration, env []string) *rietest.Function {
	t.Helper()
	bin := bins.discover
	if function == "call" {
		bin = bins.call
	}
	return rietest.StartFunction(t, rietest.Config{Bootstrap: bin, RIE: rie, Name: function, Timeout: timeout, Env: env})
}

// initLine is the JSON line startup.Fail prints.
type initLine struct {
	Level     string   `json:"level"`
	Msg       string   `json:"msg"`
	ErrorType string   `json:"error_type"`
	Service   string   `json:"service"`
	ColdStart bool     `json:"cold_start"`
	Variables []string `json:"variables"`
}

// configurationLine returns the one line f printed, which must be a JSON
// object with error_type configuration_error; the RIE's own lines (START,
// END, REPORT, and its init-failure notices, which are not JSON) are
// skipped.
func configurationLine(t *testing.T, f *rietest.Function) initLine {
	t.Helper()
	var jsonLines []string
	for _, l := range f.Logs() {
		if strings.HasPrefix(strings.TrimSpace(l), "{") {
			jsonLines = append(jsonLines, l)
		}
	}
	if len(jsonLines) != 1 {
		t.Fatalf("the function printed %d JSON lines, want 1:\n%s", len(jsonLines), strings.Join(f.Logs(), "\n"))
	}
	var line initLine
	if err := json.Unmarshal([]byte(jsonLines[0]), &line); err != nil {
		t.Fatalf("line %q: %v", jsonLines[0], err)
	}
	if line.ErrorType != "configuration_error" {
		t.Errorf("line %q: error_type %q, want configuration_error", jsonLines[0], line.ErrorType)
	}
	return line
}

// TestStartupLogKeys invokes one RIE process of each bootstrap three times:
// the summary lines carry service and function_request_id (the RIE's request
// id), cold_start true at the first invocation only, and the ColdStart
// metric once. The RIE (its no-op tracer) hands the runtime no trace header
// even when the invoke has one, and aws-lambda-go sets _X_AMZN_TRACE_ID to
// each invocation's header, so no line carries xray_trace_id here, though
// the variable is set at start: TestTraceID (shared/runner) pins the key
// from the header and from the variable.
func TestStartupLogKeys(t *testing.T) {
	const (
		trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	)
	for _, fn := range []string{"discover", "call"} {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			f := startBootstrap(t, fn, 0, []string{"MCPFN_CATALOG_DIR=" + t.TempDir(), "MCPFN_LOCAL=1", runner.EnvTraceID + "=" + trace})
			var sums []map[string]any
			for i := range 3 {
				res := invoke(t, f, []byte(`{}`))
				got := jsonLines(res.Logs, func(m map[string]any) bool { return m["msg"] == "work item" })
				if len(got) != 1 {
					t.Fatalf("invocation %d: %d summary lines, want 1:\n%s", i, len(got), strings.Join(res.Logs, "\n"))
				}
				sums = append(sums, got[0])
			}
			ids := map[any]bool{}
			for i, s := range sums {
				if s["service"] != fn {
					t.Errorf("summary %d: service %v, want %s", i, s["service"], fn)
				}
				if id, _ := s["function_request_id"].(string); id == "" || id != s["request_id"] || ids[id] {
					t.Errorf("summary %d: function_request_id %v, request_id %v: want the invocation's own id", i, s["function_request_id"], s["request_id"])
				}
				ids[s["function_request_id"]] = true
				if cold := s["cold_start"]; cold != (i == 0) {
					t.Errorf("summary %d: cold_start %v, want %t", i, cold, i == 0)
				}
			}
			for i, s := range sums {
				if got, ok := s["xray_trace_id"]; ok {
					t.Errorf("summary %d: xray_trace_id %v; the RIE hands the runtime no trace header", i, got)
				}
			}
			if err := f.Stop(); err != nil { // waits for the output to be read
				t.Fatal(err)
			}
			metrics := jsonLines(f.Logs(), func(m map[string]any) bool { _, ok := m["ColdStart"]; return ok })
			if len(metrics) != 1 || metrics[0]["ColdStart"] != float64(1) || metrics[0]["Function"] != fn {
				t.Errorf("ColdStart metric lines %v, want one, of %s", metrics, fn)
			}
		})
	}
}

// jsonLines returns the lines of logs that are JSON objects keep accepts.
func jsonLines(logs []string, keep func(map[string]any) bool) []map[string]any {
	var out []map[string]any
	for _, l := range logs {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && keep(m) {
			out = append(out, m)
		}
	}
	return out
}
