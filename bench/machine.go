package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where a run happened.
type Machine struct {
	CPU       string // model name from /proc/cpuinfo
	NumCPU    int
	MemTotal  int64 // bytes, from /proc/meminfo
	GoVersion string
	Kernel    string
	OSArch    string
}

// ThisMachine reads the machine's description; fields it cannot read stay
// empty.
func ThisMachine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				m.MemTotal = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
