package localstack_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/internal/localstack"
)

// TestTaskRecorderRecordsWhatTheSDKSends drives the recorder with the real
// aws-sdk-go-v2 Step Functions client the functions use.
func TestTaskRecorderRecordsWhatTheSDKSends(t *testing.T) {
	rec, err := localstack.StartTaskRecorder()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	client := sfn.NewFromConfig(aws.Config{
		Region:       localstack.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(localstack.AccessKeyID, localstack.SecretAccessKey, ""),
		BaseEndpoint: aws.String(rec.URL),
	})
	if _, err := client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{
		TaskToken: aws.String("token-1"), Output: aws.String(`{"ok":true}`),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendTaskFailure(t.Context(), &sfn.SendTaskFailureInput{
		TaskToken: aws.String("token-2"), Error: aws.String("mcp_authentication_failed_error"), Cause: aws.String("401"),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendTaskHeartbeat(t.Context(), &sfn.SendTaskHeartbeatInput{TaskToken: aws.String("token-3")}); err == nil {
		t.Error("SendTaskHeartbeat succeeded; the recorder only accepts success and failure")
	}
	_, err = client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String("token-4"), Output: aws.String("{")})
	if _, ok := errors.AsType[*sfntypes.InvalidOutput](err); !ok {
		t.Errorf("output not JSON: %v, want InvalidOutput", err)
	}
	_, err = client.SendTaskFailure(t.Context(), &sfn.SendTaskFailureInput{TaskToken: aws.String("token-5")})
	if ae, ok := errors.AsType[smithy.APIError](err); !ok || ae.ErrorCode() != "ValidationException" {
		t.Errorf("failure without an error: %v, want ValidationException", err)
	}
	want := []localstack.TaskReport{
		{TaskToken: "token-1", Output: json.RawMessage(`{"ok":true}`)},
		{TaskToken: "token-2", Error: "mcp_authentication_failed_error", Cause: "401"},
	}
	got := rec.Reports()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if len(got) == 2 && (got[0].Action() != "SendTaskSuccess" || got[1].Action() != "SendTaskFailure") {
		t.Errorf("actions %s, %s; want SendTaskSuccess, SendTaskFailure", got[0].Action(), got[1].Action())
	}
}
