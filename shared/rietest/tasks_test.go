package rietest

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/go-cmp/cmp"
)

// TestTaskRecorderRecordsWhatTheSDKSends drives the recorder with the real
// aws-sdk-go-v2 Step Functions client the functions use.
func TestTaskRecorderRecordsWhatTheSDKSends(t *testing.T) {
	rec := NewTaskRecorder()
	t.Cleanup(rec.Close)
	client := sfn.NewFromConfig(aws.Config{
		Region:       DefaultRegion,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
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
	want := []TaskReport{
		{Action: "SendTaskSuccess", TaskToken: "token-1", Output: json.RawMessage(`{"ok":true}`)},
		{Action: "SendTaskFailure", TaskToken: "token-2", Error: "mcp_authentication_failed_error", Cause: "401"},
	}
	if diff := cmp.Diff(want, rec.Reports()); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}
