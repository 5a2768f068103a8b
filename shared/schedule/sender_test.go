package schedule_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

func TestSenderOverSQS(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := sqs.NewFromConfig(awstest.SharedMoto(t).Config(ctx))
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(awstest.UniqueName("discover"))})
	if err != nil {
		t.Fatal(err)
	}
	s := &schedule.Sender{API: client, URL: aws.ToString(out.QueueUrl)}
	var reqs []schedule.Request
	want := map[string]bool{}
	for i := range 23 {
		r := schedule.Request{CatalogID: fmt.Sprintf("c%d", i)}
		if i%2 == 0 {
			r.VaultIDs = []string{"v"}
		}
		reqs = append(reqs, r)
		b, _ := json.Marshal(r)
		want[string(b)] = true
	}
	for i, err := range s.Enqueue(ctx, reqs) {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if err := s.Send(ctx, schedule.Request{CatalogID: "one"}); err != nil {
		t.Fatal(err)
	}
	want[`{"catalog_id":"one"}`] = true
	got := map[string]bool{}
	for {
		m, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Messages) == 0 {
			break
		}
		for _, msg := range m.Messages {
			got[aws.ToString(msg.Body)] = true
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: out.QueueUrl, ReceiptHandle: msg.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message bodies (-want +got):\n%s", diff)
	}
}
