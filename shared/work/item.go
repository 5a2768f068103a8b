package work

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Source is where a work item came from.
type Source int

// Sources.
const (
	Direct Source = iota // a direct invocation, e.g. a Step Functions Task
	SQS                  // one record of an SQS batch
)

func (s Source) String() string {
	if s == SQS {
		return "sqs"
	}
	return "direct"
}

// Item is one work item: a direct invocation or one SQS record. The runner
// fills the exported fields; the processor reports through the methods,
// which are safe for concurrent use.
type Item struct {
	ID        string // the SQS message id, or the Lambda request id
	RequestID string // the Lambda request id
	Source    Source
	Body      []byte    // the request object
	TaskToken string    // the body's task_token, or ""
	Deadline  time.Time // end of the operation budget; see OperationContext

	mu       sync.Mutex
	server   string
	secrets  []replacement
	protocol string
	requests int
	bytes    int64
	attrs    []slog.Attr
}

type replacement struct{ old, new string }

// OperationContext bounds ctx by the item's operation budget. Work that
// must still happen after the budget (the store write, reporting) uses ctx.
func (it *Item) OperationContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, it.Deadline)
}

// SetServer records the MCP server for the summary line, which shows its
// origin only, and scrubs the URL's path and query from every message about
// this item: the URL, with or without its query, becomes the origin; the
// path (when longer than "/") and the query alone become "[redacted]".
func (it *Item) SetServer(u *url.URL) {
	origin := Origin(u)
	it.mu.Lock()
	defer it.mu.Unlock()
	it.server = origin
	it.secrets = append(it.secrets, serverSecrets(u, origin)...)
}

// serverSecrets lists what SetServer scrubs. The origins map to themselves
// so that a path cannot match inside one ("/api" in "https://api.example").
func serverSecrets(u *url.URL, origin string) []replacement {
	origins := unique(u.Scheme+"://"+u.Host, origin)
	var paths []string
	for _, p := range unique(u.EscapedPath(), u.Path) {
		if len(p) > 1 {
			paths = append(paths, p)
		}
	}
	out := []replacement{{u.String(), origin}}
	for _, o := range origins {
		out = append(out, replacement{o, o})
		for _, p := range paths {
			out = append(out, replacement{o + p, origin})
		}
	}
	for _, p := range paths {
		out = append(out, replacement{p, "[redacted]"})
	}
	if u.RawQuery != "" {
		out = append(out, replacement{u.RawQuery, "[redacted]"})
	}
	return out
}

func unique(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// Server returns the origin SetServer recorded, or "".
func (it *Item) Server() string {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.server
}

// AddSecret makes Scrub replace s (a token) with "[redacted]".
func (it *Item) AddSecret(s string) {
	if s == "" {
		return
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	it.secrets = append(it.secrets, replacement{s, "[redacted]"})
}

// Scrub returns s with every secret, and the server URL's path and query,
// replaced. It replaces in one pass, longest match first, so no replacement
// is rewritten by a later one.
func (it *Item) Scrub(s string) string {
	it.mu.Lock()
	rs := slices.Clone(it.secrets)
	it.mu.Unlock()
	if len(rs) == 0 {
		return s
	}
	// Stable: of equal olds, the first registered wins.
	slices.SortStableFunc(rs, func(a, b replacement) int { return len(b.old) - len(a.old) })
	args := make([]string, 0, 2*len(rs))
	for _, r := range rs {
		args = append(args, r.old, r.new)
	}
	return strings.NewReplacer(args...).Replace(s)
}

// PublicMessage is what a caller may see about err, scrubbed: an *Error's
// message and cause, but for Internal only the message and the request id.
func (it *Item) PublicMessage(err error) string {
	var we *Error
	if !errors.As(err, &we) {
		return "internal error (request id " + it.RequestID + ")"
	}
	msg := we.Message
	switch {
	case we.Type == Internal:
		msg += " (request id " + it.RequestID + ")"
	case we.Err != nil:
		msg += ": " + we.Err.Error()
	}
	return truncate(it.Scrub(msg), maxPublicMessage)
}

// SetUsage records what the MCP connection cost for the summary line.
func (it *Item) SetUsage(protocolVersion string, requests int, responseBytes int64) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.protocol, it.requests, it.bytes = protocolVersion, requests, responseBytes
}

// Annotate adds fields to the summary line. Values must hold no secret.
func (it *Item) Annotate(attrs ...slog.Attr) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.attrs = append(it.attrs, attrs...)
}

// Origin renders u as scheme://host[:port], lower-cased, without userinfo,
// path, query or fragment.
func Origin(u *url.URL) string {
	if u == nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}
