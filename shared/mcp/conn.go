package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/text"
)

// DefaultClient is the guarded client used when Config.HTTPClient is nil:
// the process-wide egress policy at dial time, no redirects, 64 KiB header
// blocks, and DialTimeout per request.
var DefaultClient = guard.NewClient(DialTimeout)

// CallClient is DefaultClient with CallTimeout per request, for
// connections that run tools.
var CallClient = guard.NewClient(CallTimeout)

// The whole-operation budgets of Connect, ListTools and CallTool: always
// DialTimeout, ListTimeout and CallTimeout (TestBudgets); variables so that
// tests can shorten them.
var (
	connectBudget = DialTimeout
	listBudget    = ListTimeout
	callBudget    = CallTimeout
)

// closeTimeout bounds Close; whatever is still in flight then is cancelled.
const closeTimeout = 900 * time.Millisecond

// connectGrace is how long after Connect's deadline the SDK may keep
// requests in flight before they are cancelled.
const connectGrace = 200 * time.Millisecond

// implementation is how this client introduces itself.
var implementation = &sdk.Implementation{Name: "mcpfn", Version: "1"}

// Conn is one open MCP connection. Its methods are not safe for concurrent
// use; Stats and Close may be called from any goroutine.
type Conn struct {
	cs       *sdk.ClientSession
	tr       *transport
	hc       *http.Client
	log      *dropLog
	endpoint string
	query    string
	oauth    auth.OAuthHandler

	mu    sync.Mutex
	stats Stats
	pages map[string]keptPage // raw tools/list results by cursor

	closeOnce sync.Once
	closeErr  error
}

// Connect opens a Streamable HTTP connection to cfg.URL and negotiates a
// protocol version, within DialTimeout and ctx. The URL is checked before
// any dial (errors wrap guard.ErrBadURL or guard.ErrDenied). Other errors
// wrap guard.ErrDenied, guard.ErrRedirect, ErrUnauthorized or ErrProtocol
// when one of those ended the handshake; otherwise the connection failed.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	base := cfg.HTTPClient
	guarded := base == nil || base == DefaultClient || base == CallClient
	if base == nil {
		base = DefaultClient
	}
	var endpoint *url.URL
	var err error
	if guarded {
		endpoint, err = guard.Default().CheckURL(cfg.URL)
	} else {
		endpoint, err = guard.CheckURL(cfg.URL, true)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: connect: %w", err)
	}

	token := cfg.BearerToken
	if cfg.OAuth != nil {
		token = ""
	}
	tr := newTransport(base.Transport, endpoint, token)
	tr.oauth = cfg.OAuth != nil
	hc := &http.Client{
		Transport:     tr,
		CheckRedirect: tr.checkRedirect(base.CheckRedirect),
		Jar:           base.Jar,
		Timeout:       base.Timeout,
	}
	c := &Conn{tr: tr, hc: hc, log: &dropLog{}, endpoint: cfg.URL, query: endpoint.RawQuery, oauth: cfg.OAuth}

	hint := cfg.ProtocolVersion
	if !slices.Contains(sdk.SupportedProtocolVersions(), hint) {
		hint = ""
	}
	v, result, primed := primer(cfg.Discovery)
	if primed {
		hint, tr.primer = v, result
	}
	if _, err := c.handshake(ctx, hint); err != nil {
		tr.kill()
		return nil, err
	}
	c.stats.Primed = primed && tr.takePrimer() == nil // the SDK asked, and was answered locally
	return c, nil
}

// handshake connects within connectBudget and ctx, retrying once without
// the hint when a hinted handshake failed in a way a wrong hint explains,
// and records the session and what the server said of itself.
func (c *Conn) handshake(ctx context.Context, hint string) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, connectBudget)
	defer cancel()
	defer killAfter(ctx, connectGrace, c.tr.kill)()

	cs, err := c.connect(ctx, c.hc, hint)
	if err != nil && hint != "" && ctx.Err() == nil && !errors.Is(err, ErrUnauthorized) &&
		!errors.Is(err, guard.ErrDenied) && !errors.Is(err, guard.ErrRedirect) && !errors.Is(err, ErrBudgetExceeded) {
		cs, err = c.connect(ctx, c.hc, "")
	}
	if err == nil && c.tr.life.Err() != nil {
		_ = cs.Close()
		err = fmt.Errorf("mcp: connect: %w", context.Cause(ctx))
	}
	if err != nil {
		return nil, err
	}
	res := cs.InitializeResult()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cs = cs
	c.stats.ProtocolVersion = res.ProtocolVersion
	c.stats.ServerName, c.stats.ServerVersion = "", ""
	if res.ServerInfo != nil {
		c.stats.ServerName = text.Truncate(res.ServerInfo.Name, 256)
		c.stats.ServerVersion = text.Truncate(res.ServerInfo.Version, 256)
	}
	c.stats.Discovery = discoveryOf(res, c.stats.ServerName, c.stats.ServerVersion)
	return cs, nil
}

// unprime connects again, unprimed, once, when the server refused op's
// primed request as a legacy server. again reports that it did and the
// request may be sent again; a failed connect is returned.
func (c *Conn) unprime(ctx context.Context, op *operation) (again bool, _ error) {
	c.mu.Lock()
	first := c.stats.Primed && !c.stats.PrimeFallback
	c.mu.Unlock()
	if !first || ctx.Err() != nil || !c.tr.refusal(op).legacy() {
		return false, nil
	}
	c.mu.Lock()
	c.stats.PrimeFallback = true
	c.mu.Unlock()
	_ = c.cs.Close() // primed: the server gave it no session, so this sends nothing
	if _, err := c.handshake(ctx, ""); err != nil {
		return false, err
	}
	return true, nil
}

func (c *Conn) connect(ctx context.Context, hc *http.Client, hint string) (*sdk.ClientSession, error) {
	ctx, op, done := c.begin(ctx)
	defer done()
	client := sdk.NewClient(implementation, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		Logger:       slog.New(c.log),
	})
	t := &sdk.StreamableClientTransport{
		Endpoint:             c.endpoint,
		HTTPClient:           hc,
		DisableStandaloneSSE: true,
		MaxEventSize:         MaxResponseBytes,
		OAuthHandler:         c.authorizer(),
	}
	var opts *sdk.ClientSessionOptions
	if hint != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: hint}
	}
	cs, err := client.Connect(ctx, t, opts)
	if err != nil {
		return nil, c.fail(ctx, op, "connect", ErrProtocol, err)
	}
	return cs, nil
}

// killAfter arranges for kill to run d after ctx ends, until the returned
// function is called.
func killAfter(ctx context.Context, d time.Duration, kill func()) (stop func()) {
	var mu sync.Mutex
	var timer *time.Timer
	stopped := false
	unlink := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(d, kill)
		}
	})
	return func() {
		unlink()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
	}
}

// begin starts an operation: requests sent until done is called are
// attributed to it, and a fatal transport error cancels ctx.
func (c *Conn) begin(ctx context.Context) (context.Context, *operation, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	op := c.tr.begin(cancel)
	return ctx, op, func() {
		c.tr.end(op)
		cancel(nil)
	}
}

// fail maps an SDK error from operation op. answered is the sentinel for a
// server that answered the last request with something unusable.
func (c *Conn) fail(ctx context.Context, op *operation, what string, answered, err error) error {
	fatal, lastErr, wasAnswered := c.tr.outcome(op)
	switch {
	case fatal != nil && c.tr.authorizeError(op) != nil:
		err = fmt.Errorf("mcp: %s: %w: %w", what, fatal, c.tr.authorizeError(op))
	case fatal != nil:
		err = fmt.Errorf("mcp: %s: %w", what, fatal)
	case ctx.Err() != nil:
		err = fmt.Errorf("mcp: %s: %w (%v)", what, ctx.Err(), err)
	case wasAnswered:
		err = fmt.Errorf("mcp: %s: %w: %w", what, answered, err)
	case lastErr != nil && !errors.Is(err, lastErr):
		err = fmt.Errorf("mcp: %s: %w (transport: %w)", what, err, lastErr)
	default:
		err = fmt.Errorf("mcp: %s: %w", what, err)
	}
	return c.redact(err)
}

// redact hides the endpoint's query string, which may carry a credential,
// from err's text (net/http and the SDK quote the URL); the chain is kept.
func (c *Conn) redact(err error) error {
	if err == nil || c.query == "" {
		return err
	}
	return &redacted{err: err, query: c.query}
}

type redacted struct {
	err   error
	query string
}

func (r *redacted) Error() string { return text.Redact(r.err.Error(), r.query) }
func (r *redacted) Unwrap() error { return r.err }

// Stats returns what the connection cost so far. It is safe on a nil or
// zero Conn, which cost nothing.
func (c *Conn) Stats() Stats {
	if c == nil || c.tr == nil {
		return Stats{}
	}
	c.mu.Lock()
	s := c.stats
	c.mu.Unlock()
	s.Requests, s.ResponseBytes = c.tr.stats()
	return s
}

// Close ends the session (a DELETE when the server gave it an id) and
// cancels everything still in flight, within about a second. It is safe to
// call more than once, on a Conn whose work failed, and on a nil or zero
// Conn, where there is nothing to close and it returns nil.
func (c *Conn) Close() error {
	if c == nil || c.tr == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		timer := time.AfterFunc(closeTimeout, c.tr.kill)
		c.tr.dropNotices()
		c.mu.Lock()
		cs := c.cs
		c.mu.Unlock()
		err := cs.Close()
		timer.Stop()
		c.tr.kill()
		if err != nil {
			c.closeErr = c.redact(fmt.Errorf("mcp: close: %w", err))
		}
	})
	return c.closeErr
}
