package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// runSuite runs the leg's release as the client suite against client with
// extra arguments (a suite or a scenario, a baseline) and reads the
// checks.json of each scenario it ran. err is a failure to read them; the
// suite's own exit status is suiteErr.
func runSuite(l leg, client string, extra ...string) (checks map[string][]check, out []byte, suiteErr, err error) {
	dir, err := os.MkdirTemp("", "conformance")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(dir)
	args := append([]string{"--import", "./" + loopbackMJS, l.Dir + "/dist/index.js", "client",
		"--command", client, "--timeout", fmt.Sprint(clientTimeout.Milliseconds()), "-o", dir}, extra...)
	if l.SpecVersion != "" {
		args = append(args, "--spec-version", l.SpecVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), legTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.WaitDelay = 5 * time.Second
	out, suiteErr = cmd.CombinedOutput()
	checks, err = readChecks(dir)
	return checks, out, suiteErr, err
}

// onlyTimingFails reports whether every failing check of a scenario is a
// timing check (timingWarning): the suite judges a reconnect's delay by
// the wall clock while it runs every scenario at once, which a busy
// machine can push past the suite's "very late" (over 1,000 ms).
func onlyTimingFails(checks []check) bool {
	failed := false
	for _, c := range checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			if !timingWarning(c.ID) {
				return false
			}
			failed = failed || c.Status == "FAILURE"
		}
	}
	return failed
}

// rerunAlone runs scenario sc once more, alone, and judges that run; the
// first run's problem is logged either way.
func rerunAlone(t *testing.T, l leg, client string, sc scenario, reasons map[string]string, first string) (outcome, string) {
	t.Helper()
	checks, out, _, err := runSuite(l, client, "--scenario", sc.Name)
	cs, ok := checks[sc.Name]
	if err != nil || !ok {
		return outcome{Scenario: sc.Name, Result: "FAIL"}, fmt.Sprintf("%s; run again alone: no checks (%v)\n%s", first, err, lastLines(out, 30))
	}
	o, problem := judge(sc, cs, reasons)
	if problem != "" {
		return o, fmt.Sprintf("%s; run again alone: %s", first, problem)
	}
	t.Logf("%s: only a timing check failed in the suite's run of every scenario at once (%s); run again alone, it passed", sc.Name, first)
	return o, ""
}
