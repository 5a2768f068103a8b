package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/ledger"
)

// Local resource names, the same as a deployed stack's environment carries.
const (
	catalogTable = "mcpfn-catalog"
	callsTable   = "mcpfn-calls"
	discoverDLQ  = "mcpfn-discover-dlq"
	callDLQ      = "mcpfn-call-dlq"
	discoverQ    = "mcpfn-discover"
)

// unreachable is the AWS endpoint of a run without moto: a loopback port
// nothing listens on, so that no AWS request leaves the machine.
const unreachable = "http://127.0.0.1:9"

// stack is everything a local run starts. close stops it in reverse order,
// each process by its PID.
type stack struct {
	dir       string
	serverURL string
	moto      *localstack.Moto
	store     catalog.Store
	storeDesc string
	tasks     *localstack.TaskRecorder
	discover  *localstack.Function
	call      *localstack.Function
	dlqs      map[string]string // function name → DLQ URL (moto only)
	queueURL  string            // the discover queue (moto only)
	sealKey   string            // the KMS key sealing server URLs (moto only)
	oauth     *oauthPart        // nil without moto
	traces    *traceReceiver    // the functions' spans (waterfall.go)
	closers   []func() error
}

type stackConfig struct {
	rie       string
	timeout   time.Duration
	store     string // auto, moto or dir
	stateless bool
	logs      io.Writer // nil: logs are not streamed
	progress  io.Writer
}

func (s *stack) onClose(f func() error) { s.closers = append(s.closers, f) }

// close stops everything started, last first, and removes the work
// directory.
func (s *stack) close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

func startStack(ctx context.Context, cfg stackConfig) (s *stack, err error) {
	s = &stack{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.close())
			s = nil
		}
	}()
	s.dir, err = os.MkdirTemp("", "mcpfn-run-")
	if err != nil {
		return nil, err
	}
	s.onClose(func() error { return os.RemoveAll(s.dir) })

	fmt.Fprintln(cfg.progress, "Building discover, call and the example server for this machine ...")
	bins := map[string]string{
		"discover":      filepath.Join(s.dir, "discover", "bootstrap"),
		"call":          filepath.Join(s.dir, "call", "bootstrap"),
		"exampleserver": filepath.Join(s.dir, "exampleserver"),
	}
	for name, out := range bins {
		pkg := "github.com/mcpfn/mcpfn/functions/" + name
		if name == "exampleserver" {
			pkg = "github.com/mcpfn/mcpfn/cmd/exampleserver"
		}
		if err := localstack.Build(ctx, pkg, out); err != nil {
			return nil, err
		}
	}

	var args []string
	if cfg.stateless {
		args = append(args, "-stateless")
	}
	if s.serverURL, err = s.startExampleServer(ctx, bins["exampleserver"], args...); err != nil {
		return nil, err
	}
	env, err := s.startStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	allowed := []string{s.serverURL}
	if s.moto != nil {
		if err := s.startOAuth(ctx, bins["exampleserver"], cfg.stateless); err != nil {
			return nil, err
		}
		allowed = append(allowed, s.oauth.serverURL, s.oauth.as.Issuer)
		env = append(env, "MCPFN_SECRETS_PREFIX="+secretsPrefix)
	}
	if s.tasks, err = localstack.StartTaskRecorder(); err != nil {
		return nil, err
	}
	s.onClose(func() error { s.tasks.Close(); return nil })

	var allow []string
	for _, u := range allowed {
		e, err := allowEntry(u)
		if err != nil {
			return nil, err
		}
		allow = append(allow, e)
	}
	if s.traces, err = startTraceReceiver(); err != nil {
		return nil, err
	}
	s.onClose(s.traces.close)
	env = append(env, s.traces.env()...)
	env = append(env,
		"MCPFN_EGRESS_ALLOW="+strings.Join(allow, ","),
		"MCPFN_LOG_LEVEL=INFO",
		"AWS_ENDPOINT_URL_SFN="+s.tasks.URL,
	)
	for _, fn := range []struct {
		name string
		dst  **localstack.Function
		env  []string
	}{
		{"discover", &s.discover, s.functionEnv("discover")},
		{"call", &s.call, s.functionEnv("call")},
	} {
		var out io.Writer
		if cfg.logs != nil {
			out = prefixWriter(cfg.logs, fn.name+" | ")
		}
		f, err := localstack.StartFunction(localstack.Config{
			Bootstrap: bins[fn.name],
			RIE:       cfg.rie,
			Name:      fn.name,
			Timeout:   cfg.timeout,
			Env:       append(append([]string(nil), env...), fn.env...),
			Output:    out,
		})
		if err != nil {
			return nil, err
		}
		*fn.dst = f
		s.onClose(f.Stop)
	}
	return s, nil
}

// startExampleServer starts the example MCP server with args on a free
// loopback port and returns the endpoint it prints on its first line.
func (s *stack) startExampleServer(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start example server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.onClose(func() error {
		select {
		case <-done:
			return nil
		default:
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("stop example server (pid %d): %w", cmd.Process.Pid, err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	})

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		u, found := strings.CutPrefix(line, "exampleserver: serving ")
		if !ok || !found {
			return "", fmt.Errorf("example server did not announce its endpoint (first line %q)", line)
		}
		return u, nil
	case <-time.After(10 * time.Second):
		return "", errors.New("example server did not start within 10s")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// startStore starts moto with the tables and DLQs when it can (store auto
// or moto) and otherwise selects the embedded directory store. It returns
// the environment every function gets.
func (s *stack) startStore(ctx context.Context, cfg stackConfig) ([]string, error) {
	if cfg.store != "dir" {
		m, err := localstack.StartMoto()
		if err == nil {
			s.moto = m
			s.onClose(m.Stop)
			if err := s.provision(ctx); err != nil {
				return nil, err
			}
			s.store = catalog.NewDynamo(dynamodb.NewFromConfig(m.Config(ctx)), catalogTable)
			s.storeDesc = fmt.Sprintf("DynamoDB table %s in moto at %s", catalogTable, m.Endpoint())
			return m.Environ(), nil
		}
		if cfg.store == "moto" {
			return nil, err
		}
		fmt.Fprintf(cfg.progress, "moto is not available (%v);\n  using the embedded directory store instead.\n", firstLine(err))
	}
	dir := filepath.Join(s.dir, "catalog")
	store, err := catalog.NewDir(dir)
	if err != nil {
		return nil, err
	}
	s.store = store
	s.storeDesc = "embedded directory store at " + dir
	return []string{
		"AWS_ENDPOINT_URL=" + unreachable,
		"AWS_ACCESS_KEY_ID=local",
		"AWS_SECRET_ACCESS_KEY=local",
		"MCPFN_CATALOG_DIR=" + dir,
		"MCPFN_LOCAL=1", // the directory store and the in-memory ledger, under the RIE
	}, nil
}

// provision creates the catalog and calls tables, both DLQs, the discover
// queue and the KMS key that seals server URLs in moto.
func (s *stack) provision(ctx context.Context) error {
	cfg := s.moto.Config(ctx)
	db := dynamodb.NewFromConfig(cfg)
	if err := catalog.CreateTable(ctx, db, catalogTable); err != nil {
		return err
	}
	if err := ledger.CreateTable(ctx, db, callsTable); err != nil {
		return err
	}
	q := sqs.NewFromConfig(cfg)
	s.dlqs = map[string]string{}
	for fn, name := range map[string]string{"discover": discoverDLQ, "call": callDLQ} {
		out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("create queue %s: %w", name, err)
		}
		s.dlqs[fn] = aws.ToString(out.QueueUrl)
	}
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(discoverQ)})
	if err != nil {
		return fmt.Errorf("create queue %s: %w", discoverQ, err)
	}
	s.queueURL = aws.ToString(out.QueueUrl)
	key, err := kms.NewFromConfig(cfg).CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("mcpfn localrun: server URLs")})
	if err != nil {
		return fmt.Errorf("create the KMS key: %w", err)
	}
	s.sealKey = aws.ToString(key.KeyMetadata.KeyId)
	return nil
}

// makeDue sets the next_due of each catalog's head to now, as if its
// refresh interval had passed, so that a local sweep finds it due without
// waiting the interval. It is localrun's own shortcut (moto only); a
// catalog off the schedule stays off (no due_shard, not in the index).
func (s *stack) makeDue(ctx context.Context, ids []string) error {
	db := dynamodb.NewFromConfig(s.moto.Config(ctx))
	for _, id := range ids {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(catalogTable),
			Key: map[string]ddbtypes.AttributeValue{
				catalog.PartitionKey: &ddbtypes.AttributeValueMemberS{Value: id},
				catalog.SortKey:      &ddbtypes.AttributeValueMemberS{Value: catalog.HeadSortKey},
			},
			UpdateExpression:          aws.String("SET #nd = :now"),
			ConditionExpression:       aws.String("attribute_exists(#ds)"),
			ExpressionAttributeNames:  map[string]string{"#nd": catalog.NextDueAttribute, "#ds": catalog.DueShardAttribute},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":now": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix(), 10)}},
		})
		var ccf *ddbtypes.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return fmt.Errorf("make catalog %q due: %w", id, err)
		}
	}
	return nil
}

// takeQueued receives and deletes every message on the discover queue and
// returns their bodies, sorted (the sweep sends concurrently, so arrival
// order varies from run to run); nil without moto.
func (s *stack) takeQueued(ctx context.Context) ([]string, error) {
	if s.moto == nil {
		return nil, nil
	}
	msgs, err := localstack.Drain(ctx, sqs.NewFromConfig(s.moto.Config(ctx)), s.queueURL, 0)
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		bodies[i] = m.Body
	}
	return bodies, err
}

// dlqDepth returns how many messages the function's DLQ holds; 0 without
// moto.
func (s *stack) dlqDepth(ctx context.Context, function string) int {
	if s.moto == nil {
		return 0
	}
	out, err := sqs.NewFromConfig(s.moto.Config(ctx)).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(s.dlqs[function]),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	return n
}

// functionEnv is the environment one function gets on top of the common one.
func (s *stack) functionEnv(name string) []string {
	if s.moto == nil {
		return nil
	}
	env := []string{"MCPFN_CATALOG_TABLE=" + catalogTable, "MCPFN_DLQ_URL=" + s.dlqs[name], "MCPFN_DISCOVER_QUEUE_URL=" + s.queueURL, "MCPFN_SEAL_KEY_ID=" + s.sealKey}
	if name == "call" {
		env = append(env, "MCPFN_CALLS_TABLE="+callsTable)
	}
	return env
}

// allowEntry is the guard allow-list entry for a loopback URL's address and
// port, e.g. 127.0.0.1/32:8080.
func allowEntry(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	host, port := u.Hostname(), u.Port()
	if host != "127.0.0.1" || port == "" {
		return "", fmt.Errorf("local server URL %s is not on 127.0.0.1 with a port", raw)
	}
	return host + "/32:" + port, nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// prefixWriter writes each line to w with prefix in front.
func prefixWriter(w io.Writer, prefix string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, line := range strings.SplitAfter(string(p), "\n") {
			if line != "" {
				if _, err := io.WriteString(w, prefix+line); err != nil {
					return 0, err
				}
			}
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
