package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"
)

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
	srv   *httptest.Server
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

// Reports returns the reports received so far, in arrival order.
func (r *TaskRecorder) Reports() []TaskReport { return r.tasks.arrived() }

func (r *TaskRecorder) serve(w http.ResponseWriter, req *http.Request) {
	target := req.Header.Get("X-Amz-Target")
	action, ok := strings.CutPrefix(target, "AWSStepFunctions.")
	if req.Method != http.MethodPost || !ok || (action != "SendTaskSuccess" && action != "SendTaskFailure") {
		awsError(w, "UnknownOperationException", fmt.Sprintf("runnertest: %s %q is not recorded", req.Method, target))
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
