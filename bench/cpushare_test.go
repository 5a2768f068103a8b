package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/schema"
)

func TestDistinctSchemasAreValidDistinctAndFitTheBudget(t *testing.T) {
	seen := map[string]bool{}
	total := 0
	for i := range NearLimitTools {
		s := DistinctSchema(i)
		if err := schema.Check(s); err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		if seen[string(s)] {
			t.Fatalf("schema %d repeats another", i)
		}
		seen[string(s)] = true
		total += len(s)
	}
	if total > NearLimitListBytes {
		t.Errorf("the schemas take %d bytes, over a near-limit listing's %d", total, NearLimitListBytes)
	}
}

func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 200_000_000 {
		x += i % 7
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil || after <= before || x == 0 {
		t.Errorf("ProcessCPU = %s then %s (%v), want it to grow with a busy loop", before, after, err)
	}
}

func TestCommandRunsInTheGroup(t *testing.T) {
	name := fmt.Sprintf("mcpfn-bench-test-%d", os.Getpid())
	cg := testGroup(t, name)
	out, err := cg.Command(t.Context(), "cat", "/proc/self/cgroup").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuGroup(string(out)); got != "/"+name {
		t.Errorf("the command ran in cpu group %q, want /%s", got, name)
	}
}

func TestStartGatedJoinsBeforeExec(t *testing.T) {
	name := fmt.Sprintf("mcpfn-bench-gated-%d", os.Getpid())
	cg := testGroup(t, name)
	cmd := cg.CommandGated("cat", "/proc/self/cgroup")
	var out strings.Builder
	cmd.Stdout = &out
	release, err := StartGated(cmd)
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	comm, _ := os.ReadFile("/proc/" + pid + "/comm")
	before, _ := os.ReadFile("/proc/" + pid + "/cgroup")
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(comm)); got != "sh" {
		t.Errorf("before release the process runs %q, want the shell still waiting", got)
	}
	if got := cpuGroup(string(before)); got != "/"+name {
		t.Errorf("before release the shell is in cpu group %q, want /%s", got, name)
	}
	if got := cpuGroup(out.String()); got != "/"+name {
		t.Errorf("the command ran in cpu group %q, want /%s", got, name)
	}
}

// cpuGroup is the cpu controller's path in a /proc/PID/cgroup listing
// (cgroup v1 lines are ID:CONTROLLERS:PATH).
func cpuGroup(listing string) string {
	for _, line := range strings.Split(listing, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "cpu") {
			return f[2]
		}
	}
	return ""
}

// testGroup is a new cgroup at half a core, removed when t ends; t is
// skipped where the machine has no cgroup v1 cpu controller to make one.
func testGroup(t *testing.T, name string) *CPUCgroup {
	t.Helper()
	cg, err := NewCPUCgroup(name, 0.5)
	if err != nil {
		t.Skipf("no cgroup to test with: %v", err)
	}
	t.Cleanup(func() {
		if err := cg.Remove(); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	return cg
}
