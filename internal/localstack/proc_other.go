//go:build !linux

package localstack

import (
	"errors"
	"os/exec"
)

func setDeathSignal(*exec.Cmd) {}

func setGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func runtimePeakRSS(int, string) (int64, error) {
	return 0, errors.New("localstack: peak RSS needs Linux's /proc")
}

// errNoProc: without Linux's /proc, who holds a port is not known.
var errNoProc = errors.New("localstack: finding a port's holder needs Linux's /proc")

func listens(int, int) (bool, error) { return false, errNoProc }
