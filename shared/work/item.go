package work

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
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
// origin only, and scrubs the full URL and its query from every message
// about this item.
func (it *Item) SetServer(u *url.URL) {
	origin := Origin(u)
	it.mu.Lock()
	defer it.mu.Unlock()
	it.server = origin
	full := u.String()
	if full != origin {
		it.secrets = append(it.secrets, replacement{full, origin})
	}
	if u.RawQuery != "" {
		it.secrets = append(it.secrets, replacement{u.RawQuery, "[redacted]"})
	}
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

// Scrub returns s with every secret and full server URL replaced.
func (it *Item) Scrub(s string) string {
	it.mu.Lock()
	defer it.mu.Unlock()
	for _, r := range it.secrets {
		s = strings.ReplaceAll(s, r.old, r.new)
	}
	return s
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
