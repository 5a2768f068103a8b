package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
)

var built struct {
	once sync.Once
	bin  string
	err  error
}

// TestMain removes the command buildLocalrun built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// buildLocalrun builds this command once per test binary.
func buildLocalrun(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "localrun-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "localrun")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// localrun starts the built command from the repository root with args
// and returns it with a reader of its stdout; stderr goes to errOut.
func localrun(t *testing.T, bin string, errOut io.Writer, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	rie, err := localstack.FindRIE()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-rie", rie}, args...)...)
	cmd.Dir = "../.."
	cmd.Stderr = errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, out
}

// TestUp starts `localrun -up` (make up), waits for the variables it
// prints, reads the catalog it discovered through them, interrupts it
// and checks that everything it started has exited.
func TestUp(t *testing.T) {
	bin := buildLocalrun(t)
	var stderr strings.Builder
	cmd, stdout := localrun(t, bin, &stderr, "-up")

	var mu sync.Mutex // guards printed until ready
	var printed strings.Builder
	exports := map[string]string{}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			printed.WriteString(line + "\n")
			mu.Unlock()
			if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && strings.HasPrefix(line, "export ") {
				exports[k] = v
			}
			if line == UpReady {
				ready <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- errors.New("stdout ended before the stack was up")
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, printed.String(), stderr.String())
		}
	case <-time.After(10 * time.Minute): // a busy machine builds three binaries first
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("not up within 10 minutes\nstdout:\n%s\nstderr:\n%s", printed.String(), stderr.String())
	}
	out := printed.String()

	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"MCPFN_CATALOG_TABLE", "MCPFN_CALLS_TABLE", "MCPFN_SECRETS_PREFIX", "EXAMPLE_SERVER_URL", "CALL_INVOKE_URL"} {
		if exports[k] == "" {
			t.Errorf("no export of %s in:\n%s", k, out)
		}
	}
	db := dynamodb.New(dynamodb.Options{
		Region:       exports["AWS_REGION"],
		BaseEndpoint: aws.String(exports["AWS_ENDPOINT_URL"]),
		Credentials:  credentials.NewStaticCredentialsProvider(exports["AWS_ACCESS_KEY_ID"], exports["AWS_SECRET_ACCESS_KEY"], ""),
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, table := range []string{exports["MCPFN_CATALOG_TABLE"], exports["MCPFN_CALLS_TABLE"]} {
		if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
			t.Errorf("describe table %s: %v", table, err)
		}
	}
	var listed []catalog.Summary
	if err := catalog.List(ctx, db, exports["MCPFN_CATALOG_TABLE"], func(s catalog.Summary) error {
		listed = append(listed, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ID != upCatalog || listed[0].ToolCount != 3 {
		t.Errorf("catalogs %+v, want %q with the example server's 3 tools", listed, upCatalog)
	}

	pids := regexp.MustCompile(`aws-lambda-rie pid (\d+)`).FindAllStringSubmatch(out, -1)
	if len(pids) != 2 {
		t.Fatalf("output names %d RIE pids, want 2:\n%s", len(pids), out)
	}
	var addrs []string // every loopback server up started
	for _, k := range []string{"AWS_ENDPOINT_URL", "EXAMPLE_SERVER_URL"} {
		u, err := url.Parse(exports[k])
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, u.Host)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("localrun -up after SIGINT: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("localrun -up still running a minute after SIGINT")
	}
	for _, m := range pids {
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("RIE pid %d still exists (kill 0: %v)", pid, err)
		}
	}
	for _, addr := range addrs {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after SIGINT", addr)
		}
	}
}

// TestInvokeExitStatus: `make invoke-<event>` (localrun -event) exits 1
// naming the event when its outcome is not the expected one: a malformed
// call under a name that expects success.
func TestInvokeExitStatus(t *testing.T) {
	event, err := os.ReadFile("../../events/call-malformed-unknown-field.json")
	if err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(t.TempDir(), "call-mine.json")
	if err := os.WriteFile(renamed, event, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd, stdout := localrun(t, buildLocalrun(t), &stderr, "-store", "dir", "-event", renamed)
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	want := "localrun: " + renamed + ": answered errorType invalid_request_error, want success\n"
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("-event %s: %v, stderr %q; want exit status 1, ending %q", renamed, err, stderr.String(), want)
	}
}

// TestRunChecksOutcomes: an event expected to fail passes when it fails
// as expected; the mismatched copy beside it is the only one named.
func TestRunChecksOutcomes(t *testing.T) {
	event, err := os.ReadFile("../../events/discover-malformed-missing-server-url.json")
	if err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(t.TempDir(), "discover-mine.json")
	if err := os.WriteFile(renamed, event, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, logs strings.Builder
	o := options{
		events:  []string{"../../events/discover-malformed-missing-server-url.json", "../../events/discover-egress-denied-metadata.json", renamed},
		timeout: 30 * time.Second,
		store:   "dir",
	}
	err = run(t.Context(), o, &out, &logs)
	want := renamed + ": answered errorType invalid_request_error, want success"
	if err == nil || err.Error() != want {
		t.Errorf("run: %v, want only %q\noutput:\n%s", err, want, &out)
	}
}

// TestExpectedErrorsNameSampleEvents: every event expectedErrors names
// exists, so a renamed event cannot silently be expected to succeed.
func TestExpectedErrorsNameSampleEvents(t *testing.T) {
	for name := range expectedErrors {
		if _, err := os.Stat(filepath.Join("../../events", name)); err != nil {
			t.Errorf("expectedErrors names %s: %v", name, err)
		}
	}
}
