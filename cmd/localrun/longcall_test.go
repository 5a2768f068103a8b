package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// TestShowLongCall: after the default events, make run shows a task
// polled to its end and an input round answered by the stand-in platform,
// both through the call state machine; other event lists show nothing.
func TestShowLongCall(t *testing.T) {
	if _, err := os.Stat(filepath.Join("../..", longCallNode)); err != nil {
		t.Skip("needs Node and aws-local-stepfunctions from e2e/package.json: run make e2e-deps")
	}
	rie, err := localstack.FindRIE()
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{dir: t.TempDir()}
	if err := localstack.Build(t.Context(), "github.com/mcpfn/mcpfn/functions/call", filepath.Join(st.dir, "call", "bootstrap")); err != nil {
		t.Fatal(err)
	}
	cfg := stackConfig{rie: rie, timeout: 30 * time.Second}
	var out bytes.Buffer
	if err := showLongCall(t.Context(), options{events: []string{"events/call-direct.json"}}, cfg, st, "../..", &out); err != nil || out.Len() != 0 {
		t.Fatalf("other events: %v, printed %q; want nothing", err, &out)
	}
	if err := showLongCall(t.Context(), options{events: defaultEvents}, cfg, st, "../..", &out); err != nil {
		t.Fatalf("showLongCall: %v\n%s", err, &out)
	}
	got := out.String()
	for _, want := range []string{
		"task_sleep: SUCCEEDED",
		"Prepare → CallTool → Route → Tally → Poll → CallTool",
		"Poll         pending working: waits poll_after_seconds 1",
		"task_ask: SUCCEEDED",
		"AskForInput → AnswerTool → Route → Done",
		"Hello, localrun!",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got[strings.Index(got, "the task server saw"):], "tools/call"); n != 2 {
		t.Errorf("the task server saw %d tools/call, want 2 (one per call):\n%s", n, got)
	}
}
