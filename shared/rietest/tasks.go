package rietest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// TaskReport is one call a function made to the Step Functions task API.
type TaskReport struct {
	// Action is "SendTaskSuccess" or "SendTaskFailure".
	Action    string
	TaskToken string
	// Output is the success output; Error and Cause describe a failure.
	Output json.RawMessage
	Error  string
	Cause  string
}

// TaskRecorder is a Step Functions endpoint on 127.0.0.1 that records
// SendTaskSuccess and SendTaskFailure and answers each with success. Point
// a function at it with AWS_ENDPOINT_URL_SFN=URL. Moto accepts any task
// token without recording it, so tests that assert what a function reported
// use this instead. It is safe for concurrent use.
type TaskRecorder struct {
	// URL is the endpoint, http://127.0.0.1:PORT.
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	reports []TaskReport
}

// NewTaskRecorder starts a recorder; the caller must Close it.
func NewTaskRecorder() *TaskRecorder {
	r := &TaskRecorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Close stops the recorder's server.
func (r *TaskRecorder) Close() { r.srv.Close() }

// Reports returns the calls received so far, in arrival order.
func (r *TaskRecorder) Reports() []TaskReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reports)
}

func (r *TaskRecorder) serve(w http.ResponseWriter, req *http.Request) {
	target := req.Header.Get("X-Amz-Target")
	action, ok := strings.CutPrefix(target, "AWSStepFunctions.")
	if req.Method != http.MethodPost || !ok || (action != "SendTaskSuccess" && action != "SendTaskFailure") {
		awsError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("rietest: %s %q is not recorded", req.Method, target))
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		awsError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	var in struct {
		TaskToken string `json:"taskToken"`
		Output    string `json:"output"`
		Error     string `json:"error"`
		Cause     string `json:"cause"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TaskToken == "" {
		awsError(w, http.StatusBadRequest, "InvalidToken", "missing or malformed taskToken")
		return
	}
	rep := TaskReport{Action: action, TaskToken: in.TaskToken, Error: in.Error, Cause: in.Cause}
	if action == "SendTaskSuccess" {
		if !json.Valid([]byte(in.Output)) {
			awsError(w, http.StatusBadRequest, "InvalidOutput", "output is not JSON")
			return
		}
		rep.Output = json.RawMessage(in.Output)
	}
	r.mu.Lock()
	r.reports = append(r.reports, rep)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_, _ = io.WriteString(w, "{}")
}

func awsError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
