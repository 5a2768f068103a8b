package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// CatalogTools is the size of the fixtures' catalog: mcptest's 10 tools and
// 40 filler tools with realistic schemas.
const CatalogTools = 50

// Eras of the fixture servers.
const (
	Legacy    = "legacy"    // stateful go-sdk handler: 2025-11-25 via initialize
	Stateless = "stateless" // stateless go-sdk handler: 2026-07-28 via server/discover
)

// Eras lists both, legacy first.
var Eras = []string{Legacy, Stateless}

// EraVersion is the protocol version each era negotiates.
var EraVersion = map[string]string{Legacy: "2025-11-25", Stateless: "2026-07-28"}

// FixtureOptions returns the mcptest options of an era's fixture.
func FixtureOptions(era string) mcptest.Options {
	return mcptest.Options{Stateless: era == Stateless, ExtraTools: CatalogTools - 10}
}

// ServeFixtures serves both eras' fixtures on one loopback port, at /legacy
// and /stateless, writes one line "ERA URL" per era to w once listening, and
// serves until ctx ends.
func ServeFixtures(ctx context.Context, w io.Writer) error {
	mux := http.NewServeMux()
	for _, era := range Eras {
		h, _ := mcptest.NewHandler(FixtureOptions(era))
		mux.Handle("/"+era, h)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	for _, era := range Eras {
		if _, err := fmt.Fprintf(w, "%s http://%s/%s\n", era, l.Addr(), era); err != nil {
			l.Close()
			return err
		}
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Fixtures is a child process running ServeFixtures, so that its
// allocations and CPU are not the measured process's.
type Fixtures struct {
	// URL maps each era to its endpoint.
	URL   map[string]string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartFixtures starts cmd, a program that runs ServeFixtures until its
// stdin closes, and reads the URLs it prints. The caller must Stop it.
func StartFixtures(cmd *exec.Cmd) (*Fixtures, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start fixtures: %w", err)
	}
	f := &Fixtures{URL: map[string]string{}, cmd: cmd, stdin: stdin}
	sc := bufio.NewScanner(stdout)
	for len(f.URL) < len(Eras) && sc.Scan() {
		era, u, ok := strings.Cut(sc.Text(), " ")
		if ok {
			f.URL[era] = u
		}
	}
	if len(f.URL) < len(Eras) {
		f.Stop()
		return nil, fmt.Errorf("bench: fixtures printed %v, want both eras (%v)", f.URL, sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return f, nil
}

// Stop closes the child's stdin and waits for it, killing it after 5 s.
func (f *Fixtures) Stop() {
	f.stdin.Close()
	done := make(chan struct{})
	go func() {
		_ = f.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
}

// ServeFixturesUntilEOF runs ServeFixtures on stdout until stdin reaches
// EOF: the body of a fixture child.
func ServeFixturesUntilEOF(stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	return ServeFixtures(ctx, stdout)
}
