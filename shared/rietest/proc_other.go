//go:build !linux

package rietest

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
