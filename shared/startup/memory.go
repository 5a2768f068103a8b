package startup

import (
	"fmt"
	"strconv"

	"github.com/mcpfn/mcpfn/shared/runner"
)

// EnvMemorySize is the Lambda runtime's variable for the function's memory
// in MB (MiB, as Lambda counts it).
const EnvMemorySize = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"

// The memory model (docs/operations.md). No instance may pass PeakFraction
// of its memory. The Go soft memory limit is SoftLimitFraction of it; of
// that, Baseline is the process's own (runtime, clients, buffers) and the
// rest is the items' budget, held in shares of runner.ItemBytes.
const (
	DefaultMemoryMB   = 1024 // the template's default MemorySize
	PeakFraction      = 0.75
	SoftLimitFraction = 0.60
	Baseline          = 48 << 20
)

// Memory is the memory plan of an instance with MB megabytes.
type Memory struct {
	MB        int
	SoftLimit int64 // bytes: the Go runtime's soft memory limit
	Budget    int64 // bytes all in-flight work items may hold together
}

// PlanMemory returns the plan for mb megabytes.
func PlanMemory(mb int) Memory {
	total := int64(mb) << 20
	soft := int64(float64(total) * SoftLimitFraction)
	return Memory{MB: mb, SoftLimit: soft, Budget: max(soft-Baseline, 0)}
}

// CPU is the instance's CPU share in vCPUs: Lambda gives one per
// runner.MBPerVCPU megabytes (512 MB: about 0.29).
func (m Memory) CPU() float64 { return float64(m.MB) / runner.MBPerVCPU }

// CPUSlots is how many work items may run CPU-heavy work at once
// (runner.Config.CPUSlots): one per whole vCPU, at least one.
func (m Memory) CPUSlots() int { return max(1, int(m.CPU())) }

// parseMemoryMB reads EnvMemorySize: empty is DefaultMemoryMB; Lambda
// allows 128 to 10240.
func parseMemoryMB(v string) (int, error) {
	if v == "" {
		return DefaultMemoryMB, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 128 || n > 10240 {
		return 0, fmt.Errorf("want an integer from 128 to 10240")
	}
	return n, nil
}
