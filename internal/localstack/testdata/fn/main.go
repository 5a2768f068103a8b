// Command fn is the Lambda function rietest's tests run under the RIE. The
// event selects what it does: {"echo": v} returns v, {"fail": type} fails
// with that errorType, {"sleep_ms": n} sleeps, {"env": [names]} returns those
// variables, the remaining deadline and its pid.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
)

type event struct {
	Echo    json.RawMessage `json:"echo"`
	Fail    string          `json:"fail"`
	SleepMS int             `json:"sleep_ms"`
	Env     []string        `json:"env"`
	Log     string          `json:"log"`
}

func handle(ctx context.Context, e event) (any, error) {
	if e.Log != "" {
		fmt.Println(e.Log)
	}
	if e.SleepMS > 0 {
		time.Sleep(time.Duration(e.SleepMS) * time.Millisecond)
	}
	if e.Fail != "" {
		return nil, messages.InvokeResponse_Error{Type: e.Fail, Message: "failed as asked"}
	}
	if e.Env != nil {
		dl, _ := ctx.Deadline()
		vars := map[string]any{"pid": os.Getpid(), "deadline_s": time.Until(dl).Round(time.Second).Seconds()}
		for _, name := range e.Env {
			v, ok := os.LookupEnv(name)
			if ok {
				vars[name] = v
			}
		}
		return vars, nil
	}
	return e.Echo, nil
}

func main() { lambda.Start(handle) }
