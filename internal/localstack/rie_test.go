package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var bootstrap string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rietest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bootstrap = filepath.Join(dir, "fn", "bootstrap")
	if err := Build(context.Background(), "./testdata/fn", bootstrap); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func invoke(t *testing.T, f *Function, event string) Result {
	t.Helper()
	res, err := f.Invoke(t.Context(), []byte(event))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestInvoke(t *testing.T) {
	f := startFunction(t, Config{Bootstrap: bootstrap})
	tests := []struct {
		name  string
		event string
		want  Result
	}{
		{"result", `{"echo":{"a":[1,2]}}`, Result{Payload: json.RawMessage(`{"a":[1,2]}`)}},
		{"wire error type", `{"fail":"mcp_connection_failed_error"}`,
			Result{ErrorType: "mcp_connection_failed_error", ErrorMessage: "failed as asked"}},
		{"handler decode failure", `{"sleep_ms":"x"}`, Result{ErrorType: "UnmarshalTypeError"}},
		{"result shaped like an error but with more fields", `{"echo":{"errorType":"x","errorMessage":"y","more":1}}`,
			Result{Payload: json.RawMessage(`{"errorType":"x","errorMessage":"y","more":1}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := invoke(t, f, tt.event)
			got.Logs = nil
			if tt.want.ErrorType == "UnmarshalTypeError" {
				got.ErrorMessage = "" // the decoder's wording is not ours
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Invoke(%s) (-want +got):\n%s", tt.event, diff)
			}
		})
	}
}

func TestTimeoutIsReportedAndTheRuntimeRestarts(t *testing.T) {
	f := startFunction(t, Config{Bootstrap: bootstrap, Timeout: time.Second})
	got := invoke(t, f, `{"sleep_ms":5000}`)
	if got.ErrorType != TimedOutType || !strings.Contains(got.ErrorMessage, "timed out") {
		t.Errorf("slow invocation = %+v, want %s", got, TimedOutType)
	}
	if got := invoke(t, f, `{"echo":1}`); string(got.Payload) != "1" {
		t.Errorf("invocation after a timeout = %+v, want payload 1", got)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("RIETEST_CALLER_ONLY", "must not leak")
	f := startFunction(t, Config{Bootstrap: bootstrap, Name: "discover", Timeout: 7 * time.Second,
		Env: []string{"MCPFN_X=1", "AWS_REGION=eu-west-1"}})
	res := invoke(t, f, `{"env":["MCPFN_X","AWS_REGION","AWS_LAMBDA_FUNCTION_NAME","AWS_EC2_METADATA_DISABLED","AWS_CONFIG_FILE","RIETEST_CALLER_ONLY"]}`)
	var got map[string]any
	if err := json.Unmarshal(res.Payload, &got); err != nil {
		t.Fatalf("%v: %s", err, res.Payload)
	}
	delete(got, "pid")
	want := map[string]any{
		"MCPFN_X":                   "1",
		"AWS_REGION":                "eu-west-1", // Config.Env wins over the default
		"AWS_LAMBDA_FUNCTION_NAME":  "discover",
		"AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE":           os.DevNull,
		"deadline_s":                7.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("function environment (-want +got):\n%s", diff)
	}
}

func TestLogsBelongToTheirInvocation(t *testing.T) {
	f := startFunction(t, Config{Bootstrap: bootstrap})
	for i := range 3 {
		marker := fmt.Sprintf("marker-%d", i)
		res := invoke(t, f, fmt.Sprintf(`{"log":%q}`, marker))
		if diff := cmp.Diff([]string{marker}, res.Logs); diff != "" {
			t.Errorf("invocation %d logs (-want +got):\n%s", i, diff)
		}
	}
	all := strings.Join(f.Logs(), "\n")
	if n := strings.Count(all, "REPORT RequestId:"); n != 3 {
		t.Errorf("Logs has %d REPORT lines, want 3:\n%s", n, all)
	}
}

// TestConcurrentInvokesAreSerialised would crash the RIE if Invoke let two
// invocations in at once.
func TestConcurrentInvokesAreSerialised(t *testing.T) {
	f := startFunction(t, Config{Bootstrap: bootstrap})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			res, err := f.Invoke(t.Context(), fmt.Appendf(nil, `{"echo":%d,"sleep_ms":20}`, i))
			if err == nil && string(res.Payload) != fmt.Sprint(i) {
				err = fmt.Errorf("invocation %d answered %+v", i, res)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestStopEndsTheRIEAndTheRuntime(t *testing.T) {
	f, err := StartFunction(Config{Bootstrap: bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	res := invoke(t, f, `{"env":[]}`)
	var got struct{ PID int }
	if err := json.Unmarshal(res.Payload, &got); err != nil || got.PID == 0 {
		t.Fatalf("no runtime pid in %s: %v", res.Payload, err)
	}
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(); err != nil {
		t.Errorf("second Stop = %v, want nil", err)
	}
	for name, pid := range map[string]int{"rie": f.PID(), "runtime": got.PID} {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s pid %d still exists after Stop (kill 0: %v)", name, pid, err)
		}
	}
	if _, err := f.Invoke(t.Context(), []byte(`{}`)); err == nil {
		t.Error("Invoke after Stop succeeded")
	}
}

func TestStartFailsClearly(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no bootstrap", Config{}, "Bootstrap is empty"},
		{"missing rie", Config{Bootstrap: bootstrap, RIE: filepath.Join(t.TempDir(), "aws-lambda-rie")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := StartFunction(tt.cfg)
			if err == nil {
				f.Stop()
				t.Fatal("StartFunction succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("StartFunction error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Result
		wantErr bool
	}{
		{"object", `{"ok":true}`, Result{Payload: json.RawMessage(`{"ok":true}`)}, false},
		{"scalar", `42`, Result{Payload: json.RawMessage(`42`)}, false},
		{"error payload", `{"errorMessage":"m","errorType":"t"}`, Result{ErrorType: "t", ErrorMessage: "m"}, false},
		{"error payload with stack", `{"errorMessage":"m","errorType":"t","stackTrace":[]}`, Result{ErrorType: "t", ErrorMessage: "m"}, false},
		{"timeout", `Task timed out after 3.00 seconds`, Result{ErrorType: TimedOutType, ErrorMessage: "Task timed out after 3.00 seconds"}, false},
		{"garbage", `<html>`, Result{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAnswer([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseAnswer(%s) (-want +got):\n%s", tt.body, diff)
			}
		})
	}
}
