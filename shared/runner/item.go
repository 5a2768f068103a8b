package runner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfn/mcpfn/shared/text"
	"github.com/mcpfn/mcpfn/shared/wire"
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
	Queue     string    // an SQS record's eventSourceARN (its queue), or ""
	Deadline  time.Time // end of the operation budget; see OperationContext

	badToken  error      // a task_token too long to report to; refused unstarted
	coldStart bool       // of the instance's first invocation
	traceID   string     // the invocation's X-Ray trace id, or ""
	cpu       *cpuGate   // the runner's CPU slots (see CPU), or nil
	span      trace.Span // the item's; ended by summarize
	flushBy   time.Time  // the invocation's deadline, or zero

	mu       sync.Mutex
	server   string
	secrets  []replacement
	protocol string
	requests int
	bytes    int64
	attrs    []slog.Attr
}

// replacement is one scrubbing rule; token marks a credential's (see
// ScrubSecrets).
type replacement struct {
	old, new string
	token    bool
}

// newItem is a work item for body, scrubbing from its first byte: the
// server_url it names is registered with Scrub before anything checks it.
// A task_token longer than MaxTaskToken is not kept: the item fails with
// wire.InvalidRequest and nothing is reported to it.
func newItem(id, reqID string, src Source, body []byte) *Item {
	it := &Item{ID: id, RequestID: reqID, Source: src, Body: body}
	p := peekBody(body)
	if p.ServerURL != "" {
		it.scrubRawServer(p.ServerURL)
	}
	if n := utf8.RuneCountInString(p.TaskToken); n > MaxTaskToken {
		it.badToken = wire.Errorf(wire.InvalidRequest, nil, "field \"task_token\": %d characters, at most %d", n, MaxTaskToken)
	} else {
		it.TaskToken = p.TaskToken
	}
	return it
}

// OperationContext bounds ctx by the item's operation budget. Work that
// follows the operation (the store write, the ledger) uses the processor's
// own context, which the runner ends a share of the reserve later.
func (it *Item) OperationContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, it.Deadline)
}

// SetServer records the MCP server for the summary line, which shows its
// origin only, and scrubs the URL's path and query from every message about
// this item: the URL, with or without its query, becomes the origin; the
// path (when longer than "/") and the query alone become [text.Redacted].
func (it *Item) SetServer(u *url.URL) {
	origin := Origin(u)
	it.mu.Lock()
	defer it.mu.Unlock()
	it.server = origin
	it.secrets = append(it.secrets, serverSecrets(u, origin)...)
}

// scrubRawServer registers a server URL as the request wrote it, before
// any check: everything derived from it is reduced to its origin, whether
// or not the URL parses or is allowed.
func (it *Item) scrubRawServer(raw string) {
	origin, rs := rawServerSecrets(raw)
	it.mu.Lock()
	defer it.mu.Unlock()
	it.server = origin
	it.secrets = append(it.secrets, rs...)
}

// rawServerSecrets splits raw leniently into scheme, userinfo, host and
// the rest, and lists what scrubRawServer registers: raw itself and each
// origin form become the origin; the userinfo and the rest (path, query,
// fragment) become [text.Redacted]. A URL that parses adds SetServer's forms.
func rawServerSecrets(raw string) (string, []replacement) {
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		return text.Redacted, []replacement{{old: raw, new: text.Redacted}}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	var rs []replacement
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		rs = append(rs, replacement{old: authority[:at+1], new: ""})
		if len(authority[:at]) > 1 {
			rs = append(rs, replacement{old: authority[:at], new: text.Redacted})
		}
		authority = authority[at+1:]
	}
	origin := strings.ToLower(scheme) + "://" + strings.ToLower(authority)
	given := scheme + "://" + authority
	rs = append(rs, replacement{old: raw, new: origin}, replacement{old: given, new: origin}, replacement{old: origin, new: origin})
	path, fragment, _ := strings.Cut(tail, "#")
	path, query, _ := strings.Cut(path, "?")
	for _, part := range []string{tail, path, query, fragment} {
		if len(part) > 1 {
			rs = append(rs, replacement{old: part, new: text.Redacted})
		}
	}
	if len(path) > 1 {
		rs = append(rs, replacement{old: given + path, new: origin}, replacement{old: origin + path, new: origin})
	}
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		rs = append(rs, serverSecrets(u, Origin(u))...)
	}
	return origin, rs
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
	out := []replacement{{old: u.String(), new: origin}}
	for _, o := range origins {
		out = append(out, replacement{old: o, new: o})
		for _, p := range paths {
			out = append(out, replacement{old: o + p, new: origin})
		}
	}
	for _, p := range paths {
		out = append(out, replacement{old: p, new: text.Redacted})
	}
	if u.RawQuery != "" {
		out = append(out, replacement{old: u.RawQuery, new: text.Redacted})
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

// AddSecret makes Scrub replace s (a token) with [text.Redacted], and its
// common encodings too: base64 (standard and URL, padded or not), URL
// query and path escaping, and JSON string escaping.
func (it *Item) AddSecret(s string) {
	if s == "" {
		return
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	for _, form := range secretForms(s) {
		it.secrets = append(it.secrets, replacement{old: form, new: text.Redacted, token: true})
	}
}

// secretForms lists s and its encodings, each once.
func secretForms(s string) []string {
	quoted, _ := json.Marshal(s) // a string always marshals
	forms := []string{
		s,
		base64.StdEncoding.EncodeToString([]byte(s)),
		base64.RawStdEncoding.EncodeToString([]byte(s)),
		base64.URLEncoding.EncodeToString([]byte(s)),
		base64.RawURLEncoding.EncodeToString([]byte(s)),
		url.QueryEscape(s),
		url.PathEscape(s),
		string(quoted[1 : len(quoted)-1]),
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// Scrub returns s with every secret, and the server URL's path and query,
// replaced. It replaces in one pass, longest match first, so no replacement
// is rewritten by a later one.
func (it *Item) Scrub(s string) string { return it.scrub(s, false) }

// ScrubSecrets returns s with every credential AddSecret registered, in
// each of its encodings, replaced; the server URL is left as it is. It is
// for what a server sent that goes to the model (a tool's output), where
// the URL's path is the tool's own text.
func (it *Item) ScrubSecrets(s string) string { return it.scrub(s, true) }

func (it *Item) scrub(s string, tokensOnly bool) string {
	it.mu.Lock()
	rs := slices.Clone(it.secrets)
	it.mu.Unlock()
	if tokensOnly {
		rs = slices.DeleteFunc(rs, func(r replacement) bool { return !r.token })
	}
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
// message and cause, but for wire.Internal only the message and the request id.
func (it *Item) PublicMessage(err error) string {
	var we *wire.Error
	if !errors.As(err, &we) {
		return "internal error (request id " + it.RequestID + ")"
	}
	msg := we.Message
	switch {
	case we.Type == wire.Internal:
		msg += " (request id " + it.RequestID + ")"
	case we.Err != nil:
		msg += ": " + we.Err.Error()
	}
	return text.Truncate(it.Scrub(msg), maxPublicMessage)
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

// LogAttrs returns the attributes that name it in a log line: request_id,
// work_item and server (shared/credentials logs its hints with them).
func (it *Item) LogAttrs() []slog.Attr {
	return []slog.Attr{slog.String("request_id", it.RequestID), slog.String("work_item", it.ID), slog.String("server", it.Server())}
}
