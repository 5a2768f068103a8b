package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfn/mcpfn/bench/item"
)

// TimeCommand is GNU time, which reports a child's peak RSS with -v.
const TimeCommand = "/usr/bin/time"

// MemoryConfig sets up a memory-under-attack run. Child is the memchild
// binary. The child is killed when its RSS exceeds RSSCap or it runs
// longer than Timeout; the result then says so.
type MemoryConfig struct {
	Child   string
	Size    int64
	RSSCap  int64
	Timeout time.Duration
}

// MemoryResult is one client's run against one hostile format.
//   - Outcome is the child's error ("ok" if the listing succeeded), or why
//     it was killed.
//   - PeakRSS is GNU time's maximum resident set size; PeakHeap the child's
//     sampled peak of live heap objects (the last value it printed when it
//     was killed).
//   - Aborted is set when the child was killed at RSSCap or Timeout; the
//     peaks are then lower bounds.
type MemoryResult struct {
	Client   item.Client
	Format   string
	Outcome  string
	Elapsed  time.Duration
	PeakRSS  int64
	PeakHeap int64
	Aborted  bool
}

// MemoryUnderAttack runs cfg.Child under GNU time against a HostileHandler
// serving format, and reports the child's peaks.
func MemoryUnderAttack(ctx context.Context, cfg MemoryConfig, client item.Client, format string) (MemoryResult, error) {
	srv, err := Serve(HostileHandler(format, cfg.Size))
	if err != nil {
		return MemoryResult{}, err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "mcpfn-bench-mem-")
	if err != nil {
		return MemoryResult{}, err
	}
	defer os.RemoveAll(dir)
	timeOut := filepath.Join(dir, "time.txt")

	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, TimeCommand, "-v", "-o", timeOut, cfg.Child, "-client", string(client), "-url", srv.URL+"/mcp")
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	if err := cmd.Start(); err != nil {
		return MemoryResult{}, fmt.Errorf("bench: %s: %w", TimeCommand, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	res := MemoryResult{Client: client, Format: format}
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var waitErr error
watch:
	for {
		select {
		case waitErr = <-done:
			break watch
		case <-tick.C:
		}
		pid := childOf(cmd.Process.Pid)
		if pid == 0 {
			continue
		}
		rss := rssOf(pid)
		switch {
		case rss > cfg.RSSCap:
			res.Aborted = true
			res.Outcome = fmt.Sprintf("killed at the %s RSS cap after %s", bytesString(cfg.RSSCap), time.Since(start).Round(100*time.Millisecond))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		case time.Since(start) > cfg.Timeout:
			res.Aborted = true
			res.Outcome = fmt.Sprintf("killed at the %s timeout with RSS %s", cfg.Timeout, bytesString(rss))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		default:
			continue
		}
		waitErr = <-done
		break
	}
	res.Elapsed = time.Since(start)

	report, err := os.ReadFile(timeOut)
	if err != nil {
		return res, fmt.Errorf("bench: %s wrote no report (%v): %w; output: %s", TimeCommand, waitErr, err, stdout.Bytes())
	}
	if res.PeakRSS, err = maxRSS(report); err != nil {
		return res, err
	}
	if !parseChild(stdout.Bytes(), &res) {
		return res, fmt.Errorf("bench: memchild reported no outcome (%v): %s", waitErr, stdout.Bytes())
	}
	return res, nil
}

// parseChild reads memchild's lines into res: the last "heap" line's peak,
// overridden by the "done" line's elapsed time, peak and outcome. It
// reports whether a "done" line or an earlier outcome was there.
func parseChild(out []byte, res *MemoryResult) bool {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		switch {
		case f[0] == "heap" && len(f) == 2:
			res.PeakHeap, _ = strconv.ParseInt(f[1], 10, 64)
		case f[0] == "done" && len(f) == 4:
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			res.Elapsed = time.Duration(ns)
			res.PeakHeap, _ = strconv.ParseInt(f[2], 10, 64)
			res.Outcome = f[3]
		}
	}
	return res.Outcome != ""
}

// maxRSS reads GNU time's "Maximum resident set size (kbytes)" in bytes.
func maxRSS(report []byte) (int64, error) {
	const key = "Maximum resident set size (kbytes):"
	for line := range strings.SplitSeq(string(report), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: time report: %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("bench: time report has no maximum resident set size")
}

// childOf returns the first child of pid, or 0.
func childOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	child, _ := strconv.Atoi(f[0])
	return child
}

// rssOf returns the resident set size of pid in bytes, or 0.
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// bytesString prints n in MiB below 1 GiB and in GiB from there.
func bytesString(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
