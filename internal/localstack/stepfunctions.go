package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
)

// MachineRun is one execution of a state machine definition in
// aws-local-stepfunctions, run by Node on Script (e2e/sfn/run.mjs, whose
// header describes the fields): Tasks maps Task states to function URLs,
// Queues maps queue Task states to stand-ins, WaitMs (when set) overrides
// every Wait state, Context is the Context Object ($$).
type MachineRun struct {
	Node, Script, Definition string
	Substitutions            map[string]string
	Input                    any
	Tasks, Queues            map[string]string
	WaitMs                   *int
	Context                  map[string]any
}

// Execution is what an execution printed: its status, output or error,
// and its events in order.
type Execution struct {
	Status string           `json:"status"`
	Output json.RawMessage  `json:"output"`
	Error  string           `json:"error"`
	Cause  string           `json:"cause"`
	Events []ExecutionEvent `json:"events"`
}

// ExecutionEvent is one event of an execution; Input is a StateEntered
// event's state input.
type ExecutionEvent struct {
	Type  string          `json:"type"`
	State string          `json:"state"`
	Input json.RawMessage `json:"input"`
}

// Entered lists the states entered, in order.
func (e Execution) Entered() []string {
	var out []string
	for _, ev := range e.Events {
		if ev.Type == "StateEntered" {
			out = append(out, ev.State)
		}
	}
	return out
}

// RunMachine runs r to its end and returns the execution.
func RunMachine(ctx context.Context, r MachineRun) (Execution, error) {
	var ex Execution
	cfg := map[string]any{"definition": r.Definition, "substitutions": r.Substitutions, "input": r.Input,
		"tasks": r.Tasks, "queues": r.Queues, "context": r.Context}
	if r.WaitMs != nil {
		cfg["waitMs"] = *r.WaitMs
	}
	in, err := json.Marshal(cfg)
	if err != nil {
		return ex, err
	}
	cmd := exec.CommandContext(ctx, r.Node, r.Script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return ex, fmt.Errorf("localstack: %s %s: %w\n%s", r.Node, r.Script, err, stderr.Bytes())
	}
	if err := json.Unmarshal(out, &ex); err != nil {
		return ex, fmt.Errorf("localstack: %s printed %.200q: %w", r.Script, out, err)
	}
	return ex, nil
}
