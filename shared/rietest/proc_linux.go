package rietest

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the RIE in its own process group, so that Stop can reach
// the runtime it started, and kills it if this process dies without Stop.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the RIE's process group: the RIE and the runtime it started.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
