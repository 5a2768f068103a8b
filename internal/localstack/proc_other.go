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
