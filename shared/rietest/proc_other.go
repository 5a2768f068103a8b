//go:build !linux

package rietest

import (
	"errors"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func runtimePeakRSS(int, string) (int64, error) {
	return 0, errors.New("rietest: peak RSS needs Linux's /proc")
}
