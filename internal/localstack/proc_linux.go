package localstack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal kills the process if this one dies without stopping it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// setGroup puts the RIE in its own process group, so that Stop can reach
// the runtime it started, and kills it if this process dies without Stop.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the RIE's process group: the RIE and the runtime it started.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// runtimePeakRSS returns the peak resident set (VmHWM, bytes) of the
// runtime process the RIE with pid started: its child running bootstrap.
func runtimePeakRSS(pid int, bootstrap string) (int64, error) {
	child, err := findChild(pid, filepath.Base(bootstrap))
	if err != nil {
		return 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", child))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("localstack: no VmHWM in /proc/%d/status", child)
}

// findChild returns the pid of a child of pid whose command is name.
func findChild(pid int, name string) (int, error) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			c, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); err == nil && strings.TrimSpace(string(comm)) == name {
				return c, nil
			}
		}
	}
	return 0, fmt.Errorf("localstack: no %s process under pid %d", name, pid)
}

// listens reports whether process pid holds the socket listening on TCP
// port of 127.0.0.1: the socket's inode, from /proc/PID/net/tcp, among
// the process's open files.
func listens(pid, port int) (bool, error) {
	table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false, err
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	inodes := map[string]bool{}
	for line := range strings.Lines(string(table)) {
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == want && f[3] == "0A" { // 0A: LISTEN
			inodes["socket:["+f[9]+"]"] = true
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && inodes[target] {
			return true, nil
		}
	}
	return false, nil
}
