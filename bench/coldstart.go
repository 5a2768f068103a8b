package bench

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
	"syscall"
	"time"
)

// BuildFlags are the deployment build's flags (mk/run.mk LAMBDA_BUILD).
var BuildFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// BuildBootstrap compiles the main package pkg for linux/goarch with
// BuildFlags and CGO_ENABLED=0 into out, and returns out's size in bytes.
func BuildBootstrap(ctx context.Context, pkg, goarch, out string) (int64, error) {
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("bench: go build %s for %s: %w\n%s", pkg, goarch, err, b)
	}
	st, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Invocation is a function under test: its bootstrap, its environment on
// top of the Lambda variables, and an event with its expected answer check.
type Invocation struct {
	Bootstrap string
	Env       []string
	Event     []byte
	// Check inspects a successful answer; nil accepts any.
	Check func(answer []byte) error
	// Cgroup, when set, holds the RIE and the bootstrap to its CPU share
	// from the RIE's exec (CPUCgroup.Command).
	Cgroup *CPUCgroup
}

// ColdStart runs inv under a fresh aws-lambda-rie process (rie) and returns
// the time from the RIE's exec to the first invocation's answer, and the
// duration of a second, warm invocation. The RIE is killed afterwards.
func ColdStart(ctx context.Context, rie string, inv Invocation) (cold, warm time.Duration, err error) {
	ports, err := freeLoopbackPorts(2)
	if err != nil {
		return 0, 0, err
	}
	emu := "127.0.0.1:" + strconv.Itoa(ports[0])
	api := "127.0.0.1:" + strconv.Itoa(ports[1])
	args := []string{"--runtime-interface-emulator-address", emu, "--runtime-api-address", api, inv.Bootstrap}
	cmd := exec.Command(rie, args...)
	if inv.Cgroup != nil {
		cmd = inv.Cgroup.CommandGated(rie, args...)
	}
	cmd.Dir = filepath.Dir(inv.Bootstrap)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_REGION=us-east-1",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_LAMBDA_FUNCTION_NAME=" + filepath.Base(filepath.Dir(inv.Bootstrap)),
		"AWS_LAMBDA_FUNCTION_TIMEOUT=30",
	}, inv.Env...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	url := "http://" + emu + "/2015-03-31/functions/function/invocations"
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}()
	start, err := startTimed(cmd, inv.Cgroup != nil)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: start %s: %w", rie, err)
	}

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		answer, err := invoke(ctx, hc, url, inv.Event)
		if err == nil {
			cold = time.Since(start)
			if err := checkAnswer(inv, answer); err != nil {
				return 0, 0, err
			}
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			return 0, 0, fmt.Errorf("bench: first invocation: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
	start = time.Now()
	answer, err := invoke(ctx, hc, url, inv.Event)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: second invocation: %w", err)
	}
	warm = time.Since(start)
	return cold, warm, checkAnswer(inv, answer)
}

// startTimed starts cmd and returns the time of the exec to measure from:
// for a gated command (CPUCgroup.CommandGated), its release.
func startTimed(cmd *exec.Cmd, gated bool) (time.Time, error) {
	if !gated {
		start := time.Now()
		return start, cmd.Start()
	}
	release, err := StartGated(cmd)
	if err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	return start, release()
}

func invoke(ctx context.Context, hc *http.Client, url string, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s: %s", resp.Status, body)
	}
	return body, nil
}

func checkAnswer(inv Invocation, answer []byte) error {
	var e struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal(answer, &e) == nil && e.Type != "" {
		return fmt.Errorf("bench: %s answered %s: %s", inv.Bootstrap, e.Type, e.Message)
	}
	if inv.Check != nil {
		return inv.Check(answer)
	}
	return nil
}

// freeLoopbackPorts returns n loopback ports the kernel just handed out.
func freeLoopbackPorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
