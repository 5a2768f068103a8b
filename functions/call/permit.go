package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/mcpfn/mcpfn/shared/audit"
	"github.com/mcpfn/mcpfn/shared/ledger"
	"github.com/mcpfn/mcpfn/shared/policy"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Policies reads a catalog's policy document; nil when it has none.
type Policies interface {
	Get(ctx context.Context, id string) ([]byte, error)
}

// Auditor appends an entry to a catalog's audit chain.
type Auditor interface {
	Append(ctx context.Context, e audit.Entry) (audit.Entry, error)
}

var (
	_ Policies = (*policy.Store)(nil)
	_ Auditor  = (*audit.Store)(nil)
)

// StatusApprovalRequired is a pending answer's status while the call waits
// for an approval its catalog's policy asks for.
const StatusApprovalRequired = "approval_required"

// Approval is a continuation's answer to approval_required
// (docs/contract.md): ArgumentsSHA256 must be the pending answer's.
type Approval struct {
	Approved        bool   `json:"approved"`
	By              string `json:"by"`
	ArgumentsSHA256 string `json:"arguments_sha256"`
}

// maxApprover bounds an approval's by.
const maxApprover = 256

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (a *Approval) validate() error {
	switch {
	case a == nil:
		return nil
	case len(a.By) > maxApprover:
		return wire.Errorf(wire.InvalidRequest, nil, "approval.by is %d bytes, at most %d", len(a.By), maxApprover)
	case !sha256Hex.MatchString(a.ArgumentsSHA256):
		return wire.Errorf(wire.InvalidRequest, nil, "approval.arguments_sha256 must be the 64 hex digits of the pending answer's arguments_sha256")
	}
	return nil
}

// allowed is the verdict without a policy.
var allowed = policy.Verdict{Decision: policy.Allow, Rule: -1, By: "no policy"}

// policyDoc is a catalog's policy document being read: wait returns it.
type policyDoc struct {
	done chan struct{}
	doc  []byte
	err  error
}

// readPolicy starts reading req's catalog policy, so that the read runs
// beside the catalog lookup instead of after it; nil without a catalog or
// without Policies.
func (h *Handler) readPolicy(ctx context.Context, req Request) *policyDoc {
	if req.CatalogID == "" || h.Policies == nil {
		return nil
	}
	d := &policyDoc{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.doc, d.err = h.Policies.Get(ctx, req.CatalogID)
	}()
	return d
}

func (d *policyDoc) wait() ([]byte, error) {
	<-d.done
	return d.doc, d.err
}

// verdict is the catalog's policy on req, read by readPolicy (d): allow
// without a catalog, without Policies, or when the catalog has no policy.
// A policy that cannot be read fails the item (retryable); one that no
// longer compiles denies.
func (h *Handler) verdict(ctx context.Context, it *runner.Item, req Request, p primer, d *policyDoc) (policy.Verdict, error) {
	if d == nil {
		return allowed, nil
	}
	doc, err := d.wait()
	if err != nil {
		return policy.Verdict{}, wire.Errorf(wire.Internal, err, "the catalog's policy could not be read")
	}
	if doc == nil {
		return allowed, nil
	}
	pol, err := h.compile(doc)
	if err != nil {
		return policy.Verdict{Decision: policy.Deny, Rule: -1, By: "invalid policy", Reason: "the catalog's policy does not compile: " + err.Error()}, nil
	}
	c := policy.Call{Tool: p.toolName, Args: req.arguments()}
	if p.hints != nil {
		c.ReadOnly = p.hints.ReadOnlyHint != nil && *p.hints.ReadOnlyHint
		c.Destructive = p.hints.DestructiveHint != nil && *p.hints.DestructiveHint
	}
	v := pol.Decide(ctx, c)
	it.Annotate(slog.String("policy", string(v.Decision)), slog.String("policy_by", v.By))
	return v, nil
}

// refuse audits a deny and returns the refusal.
func (h *Handler) refuse(ctx context.Context, it *runner.Item, req Request, p primer, v policy.Verdict) error {
	if err := h.audit(ctx, it, req, p, audit.Denied, v.Reason, "call"); err != nil {
		return err
	}
	return wire.Errorf(wire.ToolNotPermitted, nil, "tool %q is not permitted by catalog %q's policy: %s", req.ToolName, req.CatalogID, v.Reason)
}

// askable refuses an ask the caller cannot answer: without an idempotency
// key nothing can continue the call, and an SQS message without a task
// token has nobody to ask.
func askable(req Request, key string, continuable bool, v policy.Verdict) error {
	switch {
	case key == "":
		return wire.Errorf(wire.ToolNotPermitted, nil, "tool %q needs an approval (%s), and a call without an idempotency key cannot wait for one: set tool_use_id or idempotency_key", req.ToolName, v.Reason)
	case !continuable:
		return wire.Errorf(wire.ToolNotPermitted, nil, "tool %q needs an approval (%s), and an SQS message without a task token cannot wait for one", req.ToolName, v.Reason)
	}
	return nil
}

// approval handles a call its policy asks approval for, under key whose
// lease the caller holds (a new call, or one pending approval, lp): with no
// approval in req it answers approval_required and keeps that pending;
// with one for these arguments it runs the call, or records the refusal
// as an is_error result.
func (h *Handler) approval(ctx context.Context, it *runner.Item, req Request, p primer, key string, v policy.Verdict, lp *ledger.Pending) (any, error) {
	sum, err := policy.ArgumentsSHA256(req.arguments())
	if err != nil {
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.InvalidRequest, err, "arguments")
	}
	a := req.Approval
	switch {
	case a == nil && lp != nil:
		h.release(ctx, it, key) // still waiting: the same answer again
		return pendingReply{body: lp.Answer, since: lp.Since}, nil
	case a == nil:
		if err := h.audit(ctx, it, req, p, audit.Asked, v.Reason, "call"); err != nil {
			h.release(ctx, it, key)
			return nil, err
		}
		return h.suspendApproval(ctx, it, req, p, key, v, sum)
	case a.ArgumentsSHA256 != sum:
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.InvalidRequest, nil, "the approval is for other arguments (arguments_sha256 %s; this call's is %s)", a.ArgumentsSHA256, sum)
	case !a.Approved:
		if err := h.audit(ctx, it, req, p, audit.Refused, v.Reason, a.By); err != nil {
			h.release(ctx, it, key)
			return nil, err
		}
		it.Annotate(slog.String("approval", "refused"))
		return h.finish(ctx, it, key, errorResult(req.ToolUseID, fmt.Sprintf("The tool call was not approved (refused by %s); the tool did not run.", approver(a))), true, nil)
	}
	if err := h.audit(ctx, it, req, p, audit.Approved, v.Reason, a.By); err != nil {
		h.release(ctx, it, key)
		return nil, err
	}
	it.Annotate(slog.String("approval", "granted"))
	out, err := h.call(ctx, it, req, p, h.start(req, p, true))
	if out.pending != nil {
		return h.suspend(ctx, it, key, h.newPending(req, p, out), out)
	}
	return h.finish(ctx, it, key, out.res, out.ran, err)
}

func approver(a *Approval) string {
	if a.By == "" {
		return "an unnamed approver"
	}
	return fmt.Sprintf("%q", a.By)
}

// audit appends one entry for req's decision to its catalog's chain; no
// Auditor, no entry. A failed append fails the item (retryable): a
// decision that is not a plain allow is never left unaudited.
func (h *Handler) audit(ctx context.Context, it *runner.Item, req Request, p primer, decision, rule, by string) error {
	if h.Audit == nil {
		return nil
	}
	sum, _ := policy.ArgumentsSHA256(req.arguments()) // checked valid JSON by validate
	_, err := h.Audit.Append(ctx, audit.Entry{CatalogID: req.CatalogID, Version: p.version, Tool: p.toolName,
		Decision: decision, Rule: rule, ArgumentsSHA256: sum, By: by})
	if err != nil {
		return wire.Errorf(wire.Internal, err, "the audit trail could not be written")
	}
	it.Annotate(slog.String("audited", decision))
	return nil
}

// suspendApproval keeps the call pending approval under key and returns
// the approval_required answer: the tool, its hints, the rule that asks,
// and arguments_sha256, which the approval must repeat.
func (h *Handler) suspendApproval(ctx context.Context, it *runner.Item, req Request, p primer, key string, v policy.Verdict, sum string) (any, error) {
	answer := PendingAnswer{Type: TypePending, Status: StatusApprovalRequired, PollAfterSeconds: h.pollAfter(0),
		StatusMessage: v.Reason, Tool: p.toolName, Hints: p.hints, ArgumentsSHA256: sum}
	body, err := json.Marshal(answer)
	if err != nil {
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.Internal, err, "internal error: the pending answer does not marshal")
	}
	lp := ledger.Pending{Tool: p.toolName, ArgsDigest: argsDigest(req.arguments()), Approval: true, Answer: body, Since: h.now().UTC()}
	it.Annotate(slog.String("pending", answer.Status))
	s, ok := h.Ledger.(Suspender)
	if !ok {
		h.release(ctx, it, key)
		return nil, wire.Errorf(wire.Internal, nil, "the call ledger keeps no pending state: an approval cannot be waited for")
	}
	if err := s.Suspend(ctx, key, lp); err != nil {
		// The approval still works without it: a continuation that
		// carries one takes the key over and runs the call once.
		h.logger().Warn("ledger suspend failed", "request_id", it.RequestID, "work_item", it.ID, "error", it.Scrub(err.Error()))
	}
	return pendingReply{body: body, since: lp.Since}, nil
}

// compile is doc's compiled policy, from PolicyCache when there is one.
func (h *Handler) compile(doc []byte) (*policy.Policy, error) {
	if h.PolicyCache != nil {
		return h.PolicyCache.Get(doc)
	}
	return policy.Parse(doc)
}
