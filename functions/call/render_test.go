package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
	"github.com/mcpfn/mcpfn/shared/runner/runnertest"
)

// TestRenderEveryContentType calls each fixture tool through the function
// and freezes the tool_result blocks in testdata/render.json.
func TestRenderEveryContentType(t *testing.T) {
	s := newStack(t, nil)
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	calls := []struct {
		tool string
		args any
	}{
		{"echo", map[string]string{"text": "plain text"}},
		{"add", map[string]int{"a": 2, "b": 40}},
		{"fail", nil},
		{"image", nil},
		{"audio", nil},
		{"link", nil},
		{"resource", nil},
		{"pdf", nil},
		{"everything", nil},
	}
	got := map[string]json.RawMessage{}
	for _, c := range calls {
		req := map[string]any{"server_url": srv.URL, "tool_name": c.tool, "tool_use_id": "toolu_" + c.tool}
		if c.args != nil {
			req["arguments"] = c.args
		}
		out, err := s.Invoke(t, runnertest.Payload(req), time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		got[c.tool] = runnertest.Payload(out)
	}
	runnertest.Golden(t, filepath.Join("testdata", "render.json"), got)
}

// TestOversizedResult: over the limit, a result is truncated with a marker
// the model sees, or stored in S3 and referenced; the summary says which.
func TestOversizedResult(t *testing.T) {
	srv := mcptest.NewServer(t, mcptest.Options{Stateless: true})
	big := strings.Repeat("All work and no play. ", 1000) // 22,000 bytes
	req := func(id string) []byte {
		return runnertest.Payload(map[string]any{"server_url": srv.URL, "tool_name": "echo", "arguments": map[string]string{"text": big}, "tool_use_id": id})
	}

	t.Run("truncated", func(t *testing.T) {
		s := newStack(t, nil)
		s.handler.Render.MaxBytes = 4096
		out, err := s.Invoke(t, req("toolu_trunc"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		b := runnertest.Payload(out)
		if len(b) > 4096 || !strings.Contains(string(b), "[truncated:") {
			t.Errorf("result is %d bytes; want at most 4096 with a truncation marker:\n%.300s", len(b), b)
		}
		if sum := s.Logs.Summaries()[0]; sum["truncated"] != true {
			t.Errorf("summary %v, want truncated", sum)
		}
	})

	t.Run("stored in S3", func(t *testing.T) {
		s := newStack(t, nil)
		objects := s3.NewFromConfig(s.Moto.Config(t.Context()), func(o *s3.Options) { o.UsePathStyle = true })
		bucket := awstest.UniqueName("results")
		if _, err := objects.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		s.handler.Render.MaxBytes = 4096
		s.handler.Render.Bucket, s.handler.Render.Objects, s.handler.Render.KeyPrefix = bucket, objects, ResultsKeyPrefix
		out, err := s.Invoke(t, req("toolu_store"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if b := runnertest.Payload(out); !strings.Contains(string(b), "s3://"+bucket+"/results/toolu_store/") {
			t.Errorf("result %s does not reference the stored object", b)
		}
		sum := s.Logs.Summaries()[0]
		key, _ := sum["stored_key"].(string)
		obj, err := objects.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("stored object %q: %v (summary %v)", key, err, sum)
		}
		defer obj.Body.Close()
		full, _ := io.ReadAll(obj.Body)
		var tr struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal(full, &tr); err != nil || len(tr.Content) != 1 || tr.Content[0].Text != big {
			t.Errorf("stored object is not the full result (%v)", err)
		}
	})
}
