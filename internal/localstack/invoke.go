package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// outputWriter splits the RIE's stdout into lines for Logs and Invoke.
type outputWriter Function

func (w *outputWriter) Write(p []byte) (int, error) {
	f := (*Function)(w)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partial = append(f.partial, p...)
	grew := false
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		line := string(f.partial[:i])
		f.partial = f.partial[i+1:]
		f.lines = append(f.lines, line)
		grew = true
		if f.copyTo != nil {
			fmt.Fprintln(f.copyTo, line)
		}
	}
	if grew {
		close(f.changed)
		f.changed = make(chan struct{})
	}
	return len(p), nil
}

// reportWait bounds how long Invoke waits for the runtime's REPORT line
// after the response, to attribute log lines to the invocation.
const reportWait = 2 * time.Second

// Invoke sends event and returns the result, waiting for any invocation in
// progress first. An error means the RIE could not be asked or answered
// with something that is neither a result nor an error payload; a failed
// invocation is a Result with ErrorType set.
func (f *Function) Invoke(ctx context.Context, event []byte) (Result, error) {
	f.invokeMu.Lock()
	defer f.invokeMu.Unlock()

	f.mu.Lock()
	from := len(f.lines)
	f.mu.Unlock()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(event))
	if err != nil {
		return Result{}, fmt.Errorf("localstack: %w", err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("localstack: invoke %s: %w", f.name, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return Result{}, fmt.Errorf("localstack: invoke %s: read answer: %w", f.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Result{}, fmt.Errorf("localstack: invoke %s: status %s: %s", f.name, resp.Status, body)
	}
	res, err := parseAnswer(body)
	if err != nil {
		return Result{}, fmt.Errorf("localstack: invoke %s: %w", f.name, err)
	}
	res.Logs = f.invocationLogs(ctx, from)
	return res, nil
}

// parseAnswer tells a result from an error payload ({"errorMessage",
// "errorType"} and nothing else but an optional stackTrace) and from the
// RIE's plain-text timeout answer.
func parseAnswer(body []byte) (Result, error) {
	if msg := string(body); strings.HasPrefix(msg, "Task timed out after ") {
		return Result{ErrorType: TimedOutType, ErrorMessage: msg}, nil
	}
	if !json.Valid(body) {
		return Result{}, fmt.Errorf("answer is not JSON: %.200q", body)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil && fields["errorType"] != nil && fields["errorMessage"] != nil {
		extra := len(fields) - 2
		if fields["stackTrace"] != nil {
			extra--
		}
		if extra == 0 {
			var e struct {
				Type    string `json:"errorType"`
				Message string `json:"errorMessage"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				return Result{}, fmt.Errorf("error payload: %w", err)
			}
			return Result{ErrorType: e.Type, ErrorMessage: e.Message}, nil
		}
	}
	return Result{Payload: json.RawMessage(body)}, nil
}

// invocationLogs returns the function's lines from index from through the
// runtime's REPORT line, waiting briefly for that line to arrive.
func (f *Function) invocationLogs(ctx context.Context, from int) []string {
	timer := time.NewTimer(reportWait)
	defer timer.Stop()
	for {
		f.mu.Lock()
		lines := f.lines[from:]
		changed := f.changed
		end := -1
		for i, l := range lines {
			if strings.HasPrefix(l, "REPORT RequestId:") {
				end = i
				break
			}
		}
		if end >= 0 {
			lines = lines[:end]
		}
		var out []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "START RequestId:") && !strings.HasPrefix(l, "END RequestId:") {
				out = append(out, l)
			}
		}
		f.mu.Unlock()
		if end >= 0 {
			return out
		}
		select {
		case <-changed:
		case <-timer.C:
			return out
		case <-ctx.Done():
			return out
		case <-f.done:
			return out
		}
	}
}
