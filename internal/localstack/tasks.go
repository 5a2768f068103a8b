package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
)

// TaskReport is one SendTaskSuccess (Error empty) or SendTaskFailure, as
// Tasks or a TaskRecorder received it.
type TaskReport struct {
	TaskToken string          `json:"task_token"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Cause     string          `json:"cause,omitempty"`
}

// Action names the call: "SendTaskSuccess" or "SendTaskFailure". It is
// exact because Tasks refuses a failure without an Error.
func (r TaskReport) Action() string {
	if r.Error == "" {
		return "SendTaskSuccess"
	}
	return "SendTaskFailure"
}

// Tasks records task reports, refusing what Step Functions refuses (an
// Output that is not JSON: *types.InvalidOutput; an Error over 256
// characters: a ValidationException) and a failure without an Error,
// which Step Functions accepts but the runner never sends. Fail, when set,
// is returned by every call (and nothing is recorded). With Once, a token
// takes one report, as in Step Functions: a later report for it gets
// *types.TaskTimedOut and is not recorded. Set both before use; the rest
// is safe for concurrent use.
type Tasks struct {
	Fail error
	Once bool

	mu      sync.Mutex
	reports []TaskReport
	closed  map[string]bool
}

// SendTaskSuccess records a success.
func (t *Tasks) SendTaskSuccess(_ context.Context, in *sfn.SendTaskSuccessInput, _ ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	if t.Fail != nil {
		return nil, t.Fail
	}
	out := aws.ToString(in.Output)
	if !json.Valid([]byte(out)) {
		return nil, &sfntypes.InvalidOutput{Message: aws.String(fmt.Sprintf("localstack: output is not JSON: %q", out))}
	}
	if err := t.record(TaskReport{TaskToken: aws.ToString(in.TaskToken), Output: json.RawMessage(out)}); err != nil {
		return nil, err
	}
	return &sfn.SendTaskSuccessOutput{}, nil
}

// SendTaskFailure records a failure.
func (t *Tasks) SendTaskFailure(_ context.Context, in *sfn.SendTaskFailureInput, _ ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	if t.Fail != nil {
		return nil, t.Fail
	}
	switch e := aws.ToString(in.Error); {
	case e == "":
		return nil, validation("localstack: a failure without an error")
	case len(e) > 256:
		return nil, validation("localstack: error longer than 256 characters")
	}
	if err := t.record(TaskReport{TaskToken: aws.ToString(in.TaskToken), Error: aws.ToString(in.Error), Cause: aws.ToString(in.Cause)}); err != nil {
		return nil, err
	}
	return &sfn.SendTaskFailureOutput{}, nil
}

// validation is the error the SDK returns for a ValidationException to
// SendTaskFailure, which has no type of its own there.
func validation(msg string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: msg, Fault: smithy.FaultClient}
}

func (t *Tasks) record(r TaskReport) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Once {
		if t.closed[r.TaskToken] {
			return &sfntypes.TaskTimedOut{Message: aws.String("Task Timed Out: 'Provided task does not exist anymore'")}
		}
		if t.closed == nil {
			t.closed = map[string]bool{}
		}
		t.closed[r.TaskToken] = true
	}
	t.reports = append(t.reports, r)
	return nil
}

// Reset forgets the reports (a closed token stays closed).
func (t *Tasks) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports = nil
}

// Reports returns the reports sorted by task token.
func (t *Tasks) Reports() []TaskReport {
	out := t.arrived()
	slices.SortStableFunc(out, func(a, b TaskReport) int { return strings.Compare(a.TaskToken, b.TaskToken) })
	return out
}

// arrived returns the reports in the order they were recorded.
func (t *Tasks) arrived() []TaskReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.reports)
}

// TaskRecorder is Tasks behind a Step Functions endpoint on 127.0.0.1, for
// a function binary: point it there with AWS_ENDPOINT_URL_SFN=URL. It
// answers SendTaskSuccess and SendTaskFailure as Tasks does (a refusal
// becomes the AWS error of the same code) and refuses every other action.
// Moto accepts any task token without recording it, so tests that assert
// what a function reported use this instead. It is safe for concurrent use.
type TaskRecorder struct {
	// URL is the endpoint, http://127.0.0.1:PORT.
	URL string

	tasks Tasks
	srv   *http.Server
}

// StartTaskRecorder starts a recorder on a free loopback port; the caller
// must Close it. Errors are the listener's.
func StartTaskRecorder() (*TaskRecorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localstack: task recorder: %w", err)
	}
	r := &TaskRecorder{URL: "http://" + ln.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the recorder's server and closes its connections.
func (r *TaskRecorder) Close() { _ = r.srv.Close() }

// Reports returns the reports received so far, in arrival order.
func (r *TaskRecorder) Reports() []TaskReport { return r.tasks.arrived() }

func (r *TaskRecorder) serve(w http.ResponseWriter, req *http.Request) {
	target := req.Header.Get("X-Amz-Target")
	action, ok := strings.CutPrefix(target, "AWSStepFunctions.")
	if req.Method != http.MethodPost || !ok || (action != "SendTaskSuccess" && action != "SendTaskFailure") {
		awsError(w, "UnknownOperationException", fmt.Sprintf("localstack: %s %q is not recorded", req.Method, target))
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		awsError(w, "SerializationException", err.Error())
		return
	}
	// The SDK's JSON protocol names the fields as the API does.
	var in struct {
		TaskToken string  `json:"taskToken"`
		Output    *string `json:"output"`
		Error     *string `json:"error"`
		Cause     *string `json:"cause"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TaskToken == "" {
		awsError(w, "InvalidToken", "missing or malformed taskToken")
		return
	}
	ctx := context.Background()
	if action == "SendTaskSuccess" {
		_, err = r.tasks.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(in.TaskToken), Output: in.Output})
	} else {
		_, err = r.tasks.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(in.TaskToken), Error: in.Error, Cause: in.Cause})
	}
	if err != nil {
		code := "ValidationException"
		if ae, ok := errors.AsType[smithy.APIError](err); ok {
			code = ae.ErrorCode()
		}
		awsError(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_, _ = io.WriteString(w, "{}")
}

// awsError answers a refusal in the AWS JSON protocol, always 400: the
// codes it sends are all client errors.
func awsError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}
