package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/rietest"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/vault/vaulttest"
)

// stackOptions configures both functions of a stack.
type stackOptions struct {
	allow   []string      // guard allow-list entries (MCPFN_EGRESS_ALLOW)
	timeout time.Duration // function timeout; 0 means 30s
	env     []string      // more environment for both functions
}

// stack is one discover and one call function under their own RIEs, with
// their own tables, DLQs and vault prefix in the shared moto.
type stack struct {
	catalogTable  string
	callsTable    string
	auditTable    string
	secretsPrefix string
	dlq           map[string]string // function name → DLQ URL
	discoverQueue string            // MCPFN_DISCOVER_QUEUE_URL of both functions
	sealKey       string            // MCPFN_SEAL_KEY_ID of both functions
	tasks         *localstack.TaskRecorder
	discover      *localstack.Function
	call          *localstack.Function
	callConfig    localstack.Config // the call function's, to start more processes of it
	store         *catalog.Dynamo
	sqs           *sqs.Client
	secrets       *secretsmanager.Client
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	ctx := t.Context()
	moto := awstest.SharedMoto(t)
	name := awstest.UniqueName("e2e")
	cfg := moto.Config(ctx)
	db := dynamodb.NewFromConfig(cfg)
	s := &stack{
		catalogTable:  name + "-catalog",
		callsTable:    name + "-calls",
		auditTable:    name + "-audit",
		secretsPrefix: "mcpfn/" + name + "/",
		dlq:           map[string]string{},
		sqs:           sqs.NewFromConfig(cfg),
		secrets:       secretsmanager.NewFromConfig(cfg),
	}
	if err := catalog.CreateTable(ctx, db, s.catalogTable); err != nil {
		t.Fatal(err)
	}
	if err := ledger.CreateTable(ctx, db, s.callsTable); err != nil {
		t.Fatal(err)
	}
	if err := audit.CreateTable(ctx, db, s.auditTable); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"discover", "call"} {
		out, err := s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-" + fn + "-dlq")})
		if err != nil {
			t.Fatal(err)
		}
		s.dlq[fn] = aws.ToString(out.QueueUrl)
	}
	out, err := s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-discover")})
	if err != nil {
		t.Fatal(err)
	}
	s.discoverQueue = aws.ToString(out.QueueUrl)
	key, err := kms.NewFromConfig(cfg).CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	s.sealKey = aws.ToString(key.KeyMetadata.KeyId)
	s.store = catalog.NewDynamo(db, s.catalogTable, catalog.WithSealer(catalog.KMS{API: kms.NewFromConfig(cfg), KeyID: s.sealKey}))
	if s.tasks, err = localstack.StartTaskRecorder(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.tasks.Close)

	if o.timeout == 0 {
		o.timeout = 30 * time.Second
	}
	env := append(moto.Environ(),
		"AWS_ENDPOINT_URL_SFN="+s.tasks.URL,
		"MCPFN_EGRESS_ALLOW="+strings.Join(o.allow, ","),
		"MCPFN_CATALOG_TABLE="+s.catalogTable,
		"MCPFN_AUDIT_TABLE="+s.auditTable,
		"MCPFN_DISCOVER_QUEUE_URL="+s.discoverQueue,
		"MCPFN_SEAL_KEY_ID="+s.sealKey,
		"MCPFN_SECRETS_PREFIX="+s.secretsPrefix,
		"MCPFN_LOG_LEVEL=INFO",
	)
	env = append(env, o.env...)
	s.discover = rietest.StartFunction(t, localstack.Config{
		Bootstrap: bins.discover, RIE: rie, Name: "discover", Timeout: o.timeout,
		Env: append(append([]string(nil), env...), "MCPFN_DLQ_URL="+s.dlq["discover"]),
	})
	s.callConfig = localstack.Config{
		Bootstrap: bins.call, RIE: rie, Name: "call", Timeout: o.timeout,
		Env: append(append([]string(nil), env...), "MCPFN_DLQ_URL="+s.dlq["call"], "MCPFN_CALLS_TABLE="+s.callsTable),
	}
	s.call = rietest.StartFunction(t, s.callConfig)
	return s
}

// function returns the named function of the stack.
func (s *stack) function(name string) *localstack.Function {
	if name == "call" {
		return s.call
	}
	return s.discover
}

func invoke(t *testing.T, f *localstack.Function, payload []byte) localstack.Result {
	t.Helper()
	res, err := f.Invoke(t.Context(), payload)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sqsEvent is an SQS batch with one record per body; record i has message
// id "msg-i".
func sqsEvent(t *testing.T, bodies ...any) []byte {
	t.Helper()
	type record struct {
		MessageID   string `json:"messageId"`
		Receipt     string `json:"receiptHandle"`
		Body        string `json:"body"`
		EventSource string `json:"eventSource"`
		SourceARN   string `json:"eventSourceARN"`
		Region      string `json:"awsRegion"`
	}
	var ev struct {
		Records []record `json:"Records"`
	}
	for i, b := range bodies {
		ev.Records = append(ev.Records, record{
			MessageID: fmt.Sprintf("msg-%d", i), Receipt: fmt.Sprintf("receipt-%d", i), Body: string(mustJSON(t, b)),
			EventSource: "aws:sqs", SourceARN: "arn:aws:sqs:us-east-1:123456789012:e2e", Region: "us-east-1",
		})
	}
	return mustJSON(t, ev)
}

// batchFailures returns the item identifiers of an SQS batch response.
func batchFailures(t *testing.T, res localstack.Result) []string {
	t.Helper()
	if res.ErrorType != "" {
		t.Fatalf("SQS batch failed as a whole: %s: %s", res.ErrorType, res.ErrorMessage)
	}
	var r struct {
		Failures []struct {
			ID string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(res.Payload, &r); err != nil {
		t.Fatalf("batch response %s: %v", res.Payload, err)
	}
	ids := []string{}
	for _, f := range r.Failures {
		ids = append(ids, f.ID)
	}
	return ids
}

// summary is one work item's summary log line.
type summary struct {
	WorkItem  string `json:"work_item"`
	Outcome   string `json:"outcome"`
	ErrorType string `json:"error_type"`
}

// summaries returns the work item summary lines of an invocation's logs.
func summaries(logs []string) []summary {
	var out []summary
	for _, l := range logs {
		var line struct {
			Msg string `json:"msg"`
			summary
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "work item" {
			out = append(out, line.summary)
		}
	}
	return out
}

// drainDLQ receives and deletes every message of a function's DLQ and
// returns their bodies.
func (s *stack) drainDLQ(t *testing.T, fn string) []string {
	t.Helper()
	return s.drain(t, s.dlq[fn])
}

// drain receives and deletes every message of the queue at url and
// returns their bodies.
func (s *stack) drain(t *testing.T, url string) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := s.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{
				QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle,
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// putVault stores a vault holding one credential for serverURL.
func (s *stack) putVault(t *testing.T, id, serverURL, token string) {
	t.Helper()
	vaulttest.CreateSecret(t, s.secrets, s.secretsPrefix+id, vault.Credential{ServerURL: serverURL, Token: token})
}

// startExampleServer runs the example server binary on a free loopback port
// and returns its MCP endpoint; the process is stopped by PID at cleanup.
func startExampleServer(t *testing.T, stateless bool) string {
	t.Helper()
	args := []string{"-addr", "127.0.0.1:0"}
	if stateless {
		args = append(args, "-stateless")
	}
	cmd := exec.Command(bins.exampleServer, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("example server: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "exampleserver: serving ")
	if !ok {
		t.Fatalf("example server announced %q", line)
	}
	return u
}

// allowOnly is the guard allow-list entry for a loopback URL's port.
func allowOnly(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Fatalf("%q is not a 127.0.0.1 URL with a port", raw)
	}
	return "127.0.0.1/32:" + u.Port()
}
