package runnertest

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Stack surrounds a function's handler as main wires it, over the test
// binary's moto server (awstest.SharedMoto): a fresh SQS dead-letter queue, Secrets
// Manager vaults under a fresh prefix and a DynamoDB catalog in a fresh
// table, with a guard policy allowing 127.0.0.1 and Step Functions, logs
// and metrics recorded. Start builds Runner; Invoke runs payloads.
type Stack struct {
	Moto    *awstest.Moto
	DDB     *dynamodb.Client
	SQS     *sqs.Client
	DLQ     string // the dead-letter queue's URL
	Secrets *secretsmanager.Client
	Prefix  string // the vaults' name prefix, ending in "/"
	Store   *catalog.Dynamo
	Policy  *guard.Policy // allows 127.0.0.1/32
	Tasks   *Tasks
	Logs    *Lines
	Metrics *Lines
	Logger  *slog.Logger  // writes to Logs
	Config  runner.Config // what Start built Runner from
	Runner  *runner.Runner
}

// NewStack returns the surroundings of function (its name in
// runner.Config.Function and in the queue's name).
func NewStack(tb testing.TB, function string) *Stack {
	tb.Helper()
	m := awstest.SharedMoto(tb)
	awsCfg := m.Config(tb.Context())
	policy, err := guard.NewPolicy("127.0.0.1/32")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Stack{
		Moto:    m,
		DDB:     dynamodb.NewFromConfig(awsCfg),
		SQS:     sqs.NewFromConfig(awsCfg),
		Secrets: secretsmanager.NewFromConfig(awsCfg),
		Prefix:  awstest.UniqueName("vaults") + "/",
		Policy:  policy,
		Tasks:   &Tasks{},
		Logs:    &Lines{},
		Metrics: &Lines{},
		Config:  runner.Config{Function: function},
	}
	s.DLQ = NewQueue(tb, s.SQS, function+"-dlq")
	s.Store = catalogtest.NewDynamo(tb, m)
	s.Logger = slog.New(slog.NewJSONHandler(s.Logs, nil))
	return s
}

// Client returns an HTTP client that dials under Policy with timeout; its
// idle connections close when tb ends.
func (s *Stack) Client(tb testing.TB, timeout time.Duration) *http.Client {
	client := guard.NewClientWithPolicy(s.Policy, timeout)
	tb.Cleanup(client.CloseIdleConnections)
	return client
}

// Start builds Runner over p from Config with the dead-letter queue, SQS,
// Step Functions, logger and metrics, after tweak (when non-nil) changed
// it.
func (s *Stack) Start(tb testing.TB, p runner.Processor, tweak func(*runner.Config)) {
	tb.Helper()
	s.Config.DLQURL, s.Config.Queue, s.Config.Tasks = s.DLQ, s.SQS, s.Tasks
	s.Config.Logger, s.Config.Metrics = s.Logger, s.Metrics
	if tweak != nil {
		tweak(&s.Config)
	}
	var err error
	if s.Runner, err = runner.NewRunner(s.Config, p); err != nil {
		tb.Fatal(err)
	}
}

// Invoke runs payload through Runner with a fresh request id and timeout
// to the deadline.
func (s *Stack) Invoke(tb testing.TB, payload []byte, timeout time.Duration) (any, error) {
	tb.Helper()
	ctx, cancel := Context(tb.Context(), "req-"+awstest.UniqueName("it"), timeout)
	defer cancel()
	return s.Runner.Handle(ctx, payload)
}

// CheckRecord runs body as a one-record SQS batch and checks where the
// record went for wire type wants: a permanent type to the dead-letter
// queue with wants as its mcpfn.error_type attribute, the record done; any
// other back to the queue as batch item failure msg-0.
func (s *Stack) CheckRecord(tb testing.TB, body, wants string) {
	tb.Helper()
	out, err := s.Invoke(tb, Payload(SQSEvent(body)), time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	failed := out.(events.SQSEventResponse).BatchItemFailures
	if wire.ErrorType(wants).Permanent() {
		dead := Drain(tb, s.SQS, s.DLQ, 1)
		if len(failed) != 0 || len(dead) != 1 || dead[0].Body != body || dead[0].Attributes["mcpfn.error_type"] != wants {
			tb.Errorf("failures %v, dead letters %+v; want the record in the DLQ with %s", failed, dead, wants)
		}
	} else if len(failed) != 1 || failed[0].ItemIdentifier != "msg-0" {
		tb.Errorf("failures %v; want msg-0 back in the queue", failed)
	}
}

// CheckTaskFailure runs body, a JSON object, with task_token set to token
// as a one-record SQS batch: the record must be done and the task failed
// with wire type wants, its only report since the call.
func (s *Stack) CheckTaskFailure(tb testing.TB, body, token, wants string) {
	tb.Helper()
	s.Tasks.Reset()
	var fields map[string]any
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		tb.Fatal(err)
	}
	fields["task_token"] = token
	out, err := s.Invoke(tb, Payload(SQSEvent(string(Payload(fields)))), time.Minute)
	if err != nil || len(out.(events.SQSEventResponse).BatchItemFailures) != 0 {
		tb.Fatalf("Handle = %v, %v; want the record done", out, err)
	}
	if r := s.Tasks.Reports(); len(r) != 1 || r[0].Error != wants {
		tb.Errorf("task reports %+v, want one failure %s", r, wants)
	}
}

// Outputs runs each body as a direct invocation, then all of them as one
// SQS batch, and returns as text everything that left the stack: results,
// errors, the attributes of deadLetters dead letters (see Drain), task
// reports, logs and metrics.
func (s *Stack) Outputs(tb testing.TB, bodies []string, deadLetters int) []string {
	tb.Helper()
	var seen []string
	for _, b := range bodies {
		out, err := s.Invoke(tb, []byte(b), time.Minute)
		seen = append(seen, string(Payload(out)), fmt.Sprint(err))
	}
	out, err := s.Invoke(tb, Payload(SQSEvent(bodies...)), time.Minute)
	seen = append(seen, string(Payload(out)), fmt.Sprint(err))
	for _, m := range Drain(tb, s.SQS, s.DLQ, deadLetters) {
		seen = append(seen, fmt.Sprint(m.Attributes))
	}
	for _, r := range s.Tasks.Reports() {
		seen = append(seen, string(r.Output), r.Error, r.Cause)
	}
	return append(seen, s.Logs.String(), s.Metrics.String())
}
