package main

import (
	"bytes"
	"encoding/json"
	"net/url"
	"unicode"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/runner"
	"github.com/mcpfn/mcpfn/shared/vault"
	"github.com/mcpfn/mcpfn/shared/wire"
)

// Request is a call request (docs/contract.md). Arguments is forwarded as
// given; absent or null sends {}. IdempotencyKey keys the call's ledger
// record when ToolUseID is empty (see idempotencyKey). InputResponses and
// Cancel continue a pending call under the same key (pending.go).
type Request struct {
	ServerURL      string          `json:"server_url"`
	ToolName       string          `json:"tool_name"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	VaultIDs       []string        `json:"vault_ids,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	CatalogID      string          `json:"catalog_id,omitempty"`
	TaskToken      string          `json:"task_token,omitempty"`
	InputResponses json.RawMessage `json:"input_responses,omitempty"`
	Cancel         bool            `json:"cancel,omitempty"`
	Approval       *Approval       `json:"approval,omitempty"`
}

// idempotencyKey is tool_use_id, else idempotency_key, else the task
// token, else the SQS message id; a direct invocation with none of them
// has none. kind names which one for the summary line.
func idempotencyKey(req Request, it *runner.Item) (key, kind string) {
	switch {
	case req.ToolUseID != "":
		return req.ToolUseID, "tool_use_id"
	case req.IdempotencyKey != "":
		return req.IdempotencyKey, "idempotency_key"
	case it.TaskToken != "":
		return it.TaskToken, "task_token"
	case it.Source == runner.SQS:
		return it.ID, keyMessageID
	}
	return "", ""
}

// keyMessageID is the kind of a key that is the SQS message id.
const keyMessageID = "message_id"

// arguments returns the arguments to send: nil when absent or null.
func (r Request) arguments() json.RawMessage {
	if len(r.Arguments) == 0 || bytes.Equal(r.Arguments, []byte("null")) {
		return nil
	}
	return r.Arguments
}

// validate checks the fields Decode cannot and the server URL against p
// (nil: guard.Default()).
func (r Request) validate(p *guard.Policy) (*url.URL, error) {
	switch {
	case r.ServerURL == "":
		return nil, wire.Errorf(wire.InvalidRequest, nil, "server_url is required")
	case r.ToolName == "":
		return nil, wire.Errorf(wire.InvalidRequest, nil, "tool_name is required")
	case len(r.ToolName) > maxToolName:
		return nil, wire.Errorf(wire.InvalidRequest, nil, "tool_name is %d bytes, at most %d", len(r.ToolName), maxToolName)
	case !validID(r.ToolUseID, maxToolUseID):
		return nil, wire.Errorf(wire.InvalidRequest, nil, "tool_use_id must be 1-%d characters of A-Z a-z 0-9 _ -", maxToolUseID)
	case !validKey(r.IdempotencyKey, maxIdempotencyKey):
		return nil, wire.Errorf(wire.InvalidRequest, nil, "idempotency_key must be 1-%d characters, none of them white space or control characters", maxIdempotencyKey)
	}
	if args := r.arguments(); args != nil && (args[0] != '{') {
		return nil, wire.Errorf(wire.InvalidRequest, nil, "arguments must be a JSON object")
	}
	if r.CatalogID != "" {
		if err := catalog.ValidateID(r.CatalogID); err != nil {
			return nil, wire.Errorf(wire.InvalidRequest, err, "catalog_id")
		}
	}
	for _, id := range r.VaultIDs {
		if err := vault.ValidateVaultID(id); err != nil {
			return nil, wire.Errorf(wire.InvalidRequest, err, "vault_ids")
		}
	}
	if err := r.Approval.validate(); err != nil {
		return nil, err
	}
	return wire.CheckServerURL(r.ServerURL, p)
}

const (
	maxToolName       = 256
	maxToolUseID      = 256
	maxIdempotencyKey = 512
)

// validID reports whether s is empty or 1 to n characters of A-Z a-z 0-9 _ -
// (the Messages API's tool_use id alphabet).
func validID(s string, n int) bool {
	if len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validKey reports whether s is empty or 1 to n characters, each a
// letter, mark, number, punctuation or symbol: no white space, control,
// format or private-use character. A Step Functions execution ARN
// ($$.Execution.Id) always fits; its execution name may hold non-ASCII
// letters.
func validKey(s string, n int) bool {
	if utf8.RuneCountInString(s) > n || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
