package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MBPerVCPU is the function memory at which Lambda gives one whole vCPU
// (runner.MBPerVCPU); MemorySize MB get MemorySize/MBPerVCPU of one core.
const MBPerVCPU = 1769

// cgroupCPU is where the cgroup v1 cpu controller is mounted.
const cgroupCPU = "/sys/fs/cgroup/cpu"

// CPUCgroup is a cgroup v1 cpu group whose processes share a fixed part of
// one core through cpu.cfs_quota_us.
type CPUCgroup struct{ dir string }

// NewCPUCgroup creates the group name holding its processes to share of
// one core (0.29 for 512 MB). It fails where the machine has no cgroup v1
// cpu controller or the caller may not create groups in it.
func NewCPUCgroup(name string, share float64) (*CPUCgroup, error) {
	if _, err := os.Stat(filepath.Join(cgroupCPU, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("bench: no cgroup v1 cpu controller at %s: %w", cgroupCPU, err)
	}
	dir := filepath.Join(cgroupCPU, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("bench: cgroup %s: %w", name, err)
	}
	const period = 100_000 // µs
	quota := max(1000, int(share*period))
	for file, v := range map[string]int{"cpu.cfs_period_us": period, "cpu.cfs_quota_us": quota} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(v)), 0o644); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("bench: cgroup %s: %s: %w", name, file, err)
		}
	}
	return &CPUCgroup{dir: dir}, nil
}

// Add moves process pid, all its threads, into the group; children it
// starts later are born in it.
func (c *CPUCgroup) Add(pid int) error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// Command runs name with args in the group from its exec: a shell joins
// the group and execs name, so no instruction of name runs outside the
// quota. The shell's start-up, about a millisecond, is part of the command.
func (c *CPUCgroup) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	const script = `echo $$ > "$0" && exec "$@"`
	return exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, filepath.Join(c.dir, "cgroup.procs"), name}, args...)...)
}

// CommandGated is Command for a caller that times name from its exec: the
// shell joins the group, writes a byte to file descriptor 3 and waits for
// a line on its standard input before exec'ing name. Start it with
// StartGated.
func (c *CPUCgroup) CommandGated(name string, args ...string) *exec.Cmd {
	const script = `echo $$ > "$0" && printf x >&3 && exec 3>&- && read -r _ && exec "$@"`
	return exec.Command("/bin/sh", append([]string{"-c", script, filepath.Join(c.dir, "cgroup.procs"), name}, args...)...)
}

// StartGated starts cmd, made by CommandGated with no ExtraFiles and no
// Stdin, and returns once its shell is in the group; release execs the
// program. Joining a cgroup v1 group takes up to tens of milliseconds (an
// RCU grace period), which a time measured from exec must not include.
// After an error the caller still kills and waits for cmd if it started.
func StartGated(cmd *exec.Cmd) (release func() error, err error) {
	if len(cmd.ExtraFiles) > 0 || cmd.Stdin != nil {
		return nil, errors.New("bench: StartGated needs a command without ExtraFiles and Stdin")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w} // descriptor 3
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	w.Close()
	if err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
		return nil, fmt.Errorf("bench: the gated shell did not join the cgroup: %w", err)
	}
	return func() error {
		_, err := io.WriteString(stdin, "\n")
		return err
	}, nil
}

// Remove deletes the group; its processes must have ended.
func (c *CPUCgroup) Remove() error { return os.Remove(c.dir) }

// ProcessCPU returns the CPU time process pid has used: the sum of its
// threads' run time in /proc/PID/task/TID/schedstat, in nanoseconds
// (/proc/PID/stat counts 10 ms ticks). A thread that has exited drops out
// of the sum; Go's runtime keeps its threads.
func ProcessCPU(pid int) (time.Duration, error) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(stats) == 0 {
		return 0, fmt.Errorf("bench: no threads under /proc/%d/task", pid)
	}
	var sum time.Duration
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the thread has just exited
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return 0, fmt.Errorf("bench: %s: unexpected format", st)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: %s: unexpected format", st)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// ChildNamed returns the pid of a child of pid whose command is name.
func ChildNamed(pid int, name string) (int, error) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, c := range strings.Fields(string(b)) {
			comm, _ := os.ReadFile("/proc/" + c + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				return strconv.Atoi(c)
			}
		}
	}
	return 0, fmt.Errorf("bench: no %s process under pid %d", name, pid)
}

// DistinctSchemaHandler serves the stateless mcptest fixture, except that
// tools/list answers n tools in one page, in format, each with a distinct
// input schema of about 900 bytes (DistinctSchema). NearLimitTools of them
// fit the connection budget.
func DistinctSchemaHandler(format string, n int) http.Handler {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	tools := make([]tool, n)
	for i := range tools {
		tools[i] = tool{Name: fmt.Sprintf("tool_%05d", i), Description: fmt.Sprintf("Tool %d.", i), InputSchema: DistinctSchema(i)}
	}
	list, _ := json.Marshal(map[string]any{"tools": tools})
	return fixtureExcept(func(w http.ResponseWriter, method string, id json.RawMessage) bool {
		if method != "tools/list" {
			return false
		}
		writeResult(w, format, id, list)
		return true
	})
}

// DistinctSchema is the i-th of a family of realistic, distinct input
// schemas of about 900 bytes: nested objects, an array of objects, enums,
// a pattern, an anyOf with null and, for every other one, a $ref.
func DistinctSchema(i int) json.RawMessage {
	addr := `{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}`
	defs := ""
	if i%2 == 0 {
		defs = fmt.Sprintf(`"$defs":{"A%d":{"type":"object","properties":{"street":{"type":"string","maxLength":200},"postcode":{"type":"string","pattern":"^[0-9A-Z -]{3,%d}$"}}}},`, i, 10+i%7)
		addr = fmt.Sprintf(`{"$ref":"#/$defs/A%d"}`, i)
	}
	return json.RawMessage(fmt.Sprintf(`{%s"type":"object","properties":{`+
		`"id_%d":{"type":"string","description":"The record to act on (tool %d)."},`+
		`"mode":{"type":"string","enum":["fast","careful","audit-%d"]},`+
		`"limit":{"type":"integer","minimum":1,"maximum":%d},`+
		`"filters":{"type":"array","maxItems":20,"items":{"type":"object","properties":{"field":{"type":"string"},`+
		`"op":{"type":"string","enum":["eq","ne","lt","gt"]},"value":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"null"}]}},"required":["field","op"]}},`+
		`"address":%s,"note":{"anyOf":[{"type":"string","maxLength":%d},{"type":"null"}],"default":null}},"required":["id_%d"],"additionalProperties":false}`,
		defs, i, i, i, 100+i, addr, 200+i%300, i))
}
