package localstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Region, AccessKeyID and SecretAccessKey are the static settings every
// client of a Moto server uses.
const (
	Region          = "us-east-1"
	AccessKeyID     = "test"
	SecretAccessKey = "test"
)

// MotoReadyTimeout bounds how long StartMoto waits for a server to answer.
const MotoReadyTimeout = 30 * time.Second

// interpreters are tried in order; the first that serves moto wins.
var interpreters = []string{"python3", "python"}

// Moto is one running moto server on a loopback port. Its methods are safe
// for concurrent use.
type Moto struct {
	endpoint string
	cmd      *exec.Cmd
	stderr   *lockedBuffer
	done     chan struct{}
	stopOnce sync.Once
	waitErr  error
}

var names atomic.Int64

// UniqueName returns prefix, a counter and a random suffix, joined by
// hyphens: a name for a table, queue, bucket or secret that nothing else
// on a shared server (or a rerun) uses.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%08x", prefix, names.Add(1), rand.Uint32())
}

// NewTable creates a DynamoDB table named UniqueName(prefix) on m with
// create, a package's CreateTable, and returns a client for m and the
// table's name. It fails when *dynamodb.Client does not implement API.
func NewTable[API any](ctx context.Context, m *Moto, prefix string, create func(context.Context, API, string) error) (*dynamodb.Client, string, error) {
	client := dynamodb.NewFromConfig(m.Config(ctx))
	api, ok := any(client).(API)
	if !ok {
		return nil, "", fmt.Errorf("localstack: *dynamodb.Client is not a %T", (*API)(nil))
	}
	name := UniqueName(prefix)
	if err := create(ctx, api, name); err != nil {
		return nil, "", fmt.Errorf("localstack: create table %s: %w", name, err)
	}
	return client, name, nil
}

// Start starts a moto server on a free loopback port and waits until it
// answers GET /moto-api/ (at most MotoReadyTimeout). The caller must call Stop.
func StartMoto() (*Moto, error) {
	var errs []error
	for _, python := range interpreters {
		if _, err := exec.LookPath(python); err != nil {
			errs = append(errs, fmt.Errorf("%s: not on PATH", python))
			continue
		}
		m, err := startWith(python)
		if err == nil {
			return m, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("cannot start moto (install it with pip install 'moto[server]==5.2.1'): %w", errors.Join(errs...))
}

func startWith(python string) (*Moto, error) {
	const attempts = 3 // another process may take the port between probe and bind
	var last error
	for range attempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		m := &Moto{
			endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
			stderr:   &lockedBuffer{},
			done:     make(chan struct{}),
		}
		m.cmd = exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
		m.cmd.Stdout = m.stderr
		m.cmd.Stderr = m.stderr
		setDeathSignal(m.cmd)
		if err := m.cmd.Start(); err != nil {
			return nil, fmt.Errorf("%s: %w", python, err)
		}
		go func() {
			m.waitErr = m.cmd.Wait()
			close(m.done)
		}()
		if err := m.waitReady(); err != nil {
			_ = m.Stop()
			last = fmt.Errorf("%s -m moto.server on port %d: %w; output: %s", python, port, err, m.stderr.tail(2000))
			continue
		}
		return m, nil
	}
	return nil, last
}

// freePort returns a loopback port the kernel just handed out and released.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("probe a free loopback port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("release probe port %d: %w", port, err)
	}
	return port, nil
}

func (m *Moto) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(MotoReadyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-m.done:
			return fmt.Errorf("exited before ready: %v", m.waitErr)
		default:
		}
		resp, err := client.Get(m.endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			// The answer must come from our process, not another that
			// holds the port.
			if resp.StatusCode == http.StatusOK && answeredByUs(m.cmd.Process.Pid, m.done, 100*time.Millisecond, strings.TrimPrefix(m.endpoint, "http://")) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s", MotoReadyTimeout)
}

// Endpoint is the server's base URL, http://127.0.0.1:PORT.
func (m *Moto) Endpoint() string { return m.endpoint }

// Config is an aws.Config for this server: static credentials test/test,
// region us-east-1, BaseEndpoint set. It ignores the environment and shared
// config files.
func (m *Moto) Config(context.Context) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		BaseEndpoint: aws.String(m.endpoint),
	}
}

// Environ is the environment a child process (a function binary) needs to
// reach this server with the standard AWS SDK variables.
func (m *Moto) Environ() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + m.endpoint,
		"AWS_REGION=" + Region,
		"AWS_DEFAULT_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=" + AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + SecretAccessKey,
	}
}

// Reset wipes all state of every service (POST /moto-api/reset).
func (m *Moto) Reset(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint+"/moto-api/reset", nil)
	if err != nil {
		return fmt.Errorf("moto reset: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("moto reset: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("moto reset: status %s", resp.Status)
	}
	return nil
}

// Stop kills the server process by its PID and waits for it to exit. It is
// idempotent.
func (m *Moto) Stop() error {
	var err error
	m.stopOnce.Do(func() {
		select {
		case <-m.done:
			return
		default:
		}
		if kerr := m.cmd.Process.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			err = fmt.Errorf("stop moto pid %d: %w", m.cmd.Process.Pid, kerr)
			return
		}
		<-m.done
	})
	return err
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	const limit = 1 << 20 // moto logs every request; keep memory bounded
	if b.buf.Len() > limit {
		tail := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-limit/2:]...)
		b.buf.Reset()
		b.buf.Write(tail)
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.Bytes()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return string(s)
}
