package localstack

// A Function runs a Lambda bootstrap binary under the AWS Lambda Runtime
// Interface Emulator (aws-lambda-rie) on loopback, the way `sam local
// invoke` runs it inside its container. One Function is one RIE process
// serving one binary. The RIE crashes on concurrent invocations, so
// [Function.Invoke] sends one at a time.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RIEName is the emulator's command name; `make tools` installs it into
// $(go env GOPATH)/bin.
const RIEName = "aws-lambda-rie"

// TimedOutType is the errorType of an invocation the RIE stopped at the
// function timeout; it is the type Lambda itself reports.
const TimedOutType = "Sandbox.Timedout"

// DefaultTimeout is the function timeout of a zero Config.
const DefaultTimeout = 30 * time.Second

// RIEReadyTimeout bounds how long StartFunction waits for the RIE to accept connections.
const RIEReadyTimeout = 10 * time.Second

// ErrNoRIE is returned when aws-lambda-rie is neither on PATH nor in
// $(go env GOPATH)/bin.
var ErrNoRIE = errors.New("localstack: aws-lambda-rie not found (run make tools)")

// Config describes one function under the RIE (see StartFunction).
type Config struct {
	// Bootstrap is the path of the function binary.
	Bootstrap string
	// RIE is the path of aws-lambda-rie; empty uses FindRIE.
	RIE string
	// Name is AWS_LAMBDA_FUNCTION_NAME; empty uses the binary's directory name.
	Name string
	// Timeout is the function timeout (AWS_LAMBDA_FUNCTION_TIMEOUT), rounded
	// up to whole seconds; zero means DefaultTimeout.
	Timeout time.Duration
	// Env is added to the function's environment (KEY=VALUE; later entries
	// win). The process does not inherit the caller's environment except
	// PATH; see StartFunction.
	Env []string
	// Output, when set, receives a copy of every line the function prints.
	Output io.Writer
}

// Result is the outcome of one invocation.
type Result struct {
	// Payload is the handler's result; nil when the invocation failed.
	Payload json.RawMessage
	// ErrorType and ErrorMessage are set when the invocation failed: the
	// Lambda errorType (the handler's, or TimedOutType) and its message.
	ErrorType    string
	ErrorMessage string
	// Logs are the lines the function printed during this invocation,
	// without the runtime's START, END and REPORT lines.
	Logs []string
}

// Function is one running RIE process. Its methods are safe for concurrent
// use; invocations are serialised.
type Function struct {
	name   string
	url    string
	cmd    *exec.Cmd
	client *http.Client

	invokeMu sync.Mutex

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced when lines grows
	stderr  bytes.Buffer

	partial  []byte // output after the last newline
	copyTo   io.Writer
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// FindRIE returns the path of aws-lambda-rie: from PATH, else from
// $(go env GOPATH)/bin. It returns ErrNoRIE when neither has it.
func FindRIE() (string, error) {
	if p, err := exec.LookPath(RIEName); err == nil {
		return p, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(gopath))) {
			p := filepath.Join(dir, "bin", RIEName)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	return "", ErrNoRIE
}

// Build compiles the main package pkg (an import path or a path relative to
// the working directory) for this machine into out, with -tags lambda.norpc
// as the deployment build uses.
func Build(ctx context.Context, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("localstack: go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// StartFunction starts aws-lambda-rie serving cfg.Bootstrap on two free loopback
// ports (both address flags set) and waits until it accepts connections.
// The function's environment is PATH, cfg.Env and the Lambda variables, plus
// AWS_EC2_METADATA_DISABLED=true and empty shared AWS config files, so that
// nothing outside loopback is asked for credentials. The caller must Stop it.
func StartFunction(cfg Config) (*Function, error) {
	if cfg.Bootstrap == "" {
		return nil, errors.New("localstack: Config.Bootstrap is empty")
	}
	bootstrap, err := filepath.Abs(cfg.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	if cfg.RIE == "" {
		if cfg.RIE, err = FindRIE(); err != nil {
			return nil, err
		}
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(filepath.Dir(bootstrap))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	const attempts = 3 // another process may take a port between probe and bind
	var last error
	for range attempts {
		f, err := start(cfg, bootstrap)
		if err == nil {
			return f, nil
		}
		last = err
	}
	return nil, last
}

func start(cfg Config, bootstrap string) (*Function, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	emulator := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	api := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	timeout := int((cfg.Timeout + time.Second - 1) / time.Second)

	f := &Function{
		name:    cfg.Name,
		url:     "http://" + emulator + "/2015-03-31/functions/function/invocations",
		client:  &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		changed: make(chan struct{}),
		copyTo:  cfg.Output,
		done:    make(chan struct{}),
	}
	f.cmd = exec.Command(cfg.RIE, "--runtime-interface-emulator-address", emulator, "--runtime-api-address", api, bootstrap)
	f.cmd.Dir = filepath.Dir(bootstrap)
	f.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_REGION=" + Region,
		"AWS_DEFAULT_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}, cfg.Env...)
	f.cmd.Env = append(f.cmd.Env,
		"AWS_LAMBDA_FUNCTION_NAME="+cfg.Name,
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(timeout),
	)
	setGroup(f.cmd)
	f.cmd.Stdout = (*outputWriter)(f)
	f.cmd.Stderr = &lockedWriter{mu: &f.mu, w: &f.stderr}
	// A runtime that outlives the RIE keeps the output pipe open; do not
	// wait for it longer than this once the RIE has exited.
	f.cmd.WaitDelay = time.Second
	if err := f.cmd.Start(); err != nil {
		return nil, fmt.Errorf("localstack: start %s: %w", cfg.RIE, err)
	}
	go func() {
		f.waitErr = f.cmd.Wait()
		close(f.done)
	}()
	if err := f.waitReady(emulator, api); err != nil {
		_ = f.Stop()
		return nil, fmt.Errorf("localstack: %s on %s: %w; stderr: %s", cfg.Name, emulator, err, f.stderrTail(2000))
	}
	return f, nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("localstack: probe a free loopback port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// answeredByUs decides, once something answered on addrs[0], whether it
// was process pid: true when pid holds the listener of every addr
// (127.0.0.1:PORT), false when another process holds one (pid then exits
// on bind, or binds once the port is free). Without /proc it waits settle
// and reports whether pid is still running: a port held by another
// process makes it exit on bind.
func answeredByUs(pid int, done <-chan struct{}, settle time.Duration, addrs ...string) bool {
	for _, addr := range addrs {
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		ok, err := listens(pid, port)
		if err != nil {
			select {
			case <-done:
				return false
			case <-time.After(settle):
				return true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// waitReady waits until the RIE answers on addr, its emulator address,
// holding both its ports: it binds the runtime API's (api) too, and exits
// when that one is taken.
func (f *Function) waitReady(addr, api string) error {
	deadline := time.Now().Add(RIEReadyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-f.done:
			return fmt.Errorf("exited before ready: %v", f.waitErr)
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			if answeredByUs(f.cmd.Process.Pid, f.done, 50*time.Millisecond, addr, api) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not accepting connections after %s", RIEReadyTimeout)
}

// Name is the function name (AWS_LAMBDA_FUNCTION_NAME).
func (f *Function) Name() string { return f.name }

// URL is the invocation endpoint,
// http://127.0.0.1:PORT/2015-03-31/functions/function/invocations.
func (f *Function) URL() string { return f.url }

// PID is the RIE process id.
func (f *Function) PID() int { return f.cmd.Process.Pid }

// RuntimePeakRSS returns the peak resident set size, in bytes, of the
// function's runtime process (VmHWM of the bootstrap the RIE started; the
// RIE starts it on the first invocation). Linux only.
func (f *Function) RuntimePeakRSS() (int64, error) {
	return runtimePeakRSS(f.cmd.Process.Pid, f.cmd.Args[len(f.cmd.Args)-1])
}

// Logs returns every line the function and the runtime printed so far.
func (f *Function) Logs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Stop ends the RIE by its PID (SIGTERM, which also ends the runtime it
// started; SIGKILL after stopGrace) and waits for it. It is idempotent.
func (f *Function) Stop() error {
	f.stopOnce.Do(func() {
		select {
		case <-f.done:
			return
		default:
		}
		if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			f.stopErr = fmt.Errorf("stop %s (pid %d): %w", f.name, f.PID(), err)
		}
		select {
		case <-f.done:
		case <-time.After(stopGrace):
			killGroup(f.cmd)
			<-f.done
		}
	})
	return f.stopErr
}

func (f *Function) stderrTail(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.stderr.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	const limit = 1 << 20 // the RIE logs every invocation; keep memory bounded
	if l.w.Len() > limit {
		tail := append([]byte(nil), l.w.Bytes()[l.w.Len()-limit/2:]...)
		l.w.Reset()
		l.w.Write(tail)
	}
	return l.w.Write(p)
}
