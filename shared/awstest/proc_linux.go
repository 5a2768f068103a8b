package awstest

import (
	"os/exec"
	"syscall"
)

// setProcAttr kills the server if the test binary dies without cleanup.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
