// Package audit keeps, per catalog, a hash chain of the policy decisions
// that are not a plain allow (deny, ask, approvals, quarantine, approve):
// one item per decision in the catalog table, each holding the hash of the
// one before, so that editing or deleting one is found by Verify.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Entry is one audited decision. It never holds arguments, results,
// tokens or URLs: ArgumentsSHA256 stands for the arguments.
type Entry struct {
	Seq             int64  `dynamodbav:"seq" json:"seq"`
	At              string `dynamodbav:"at" json:"at"` // RFC 3339, UTC
	CatalogID       string `dynamodbav:"catalog_id" json:"catalog_id"`
	Version         string `dynamodbav:"version" json:"version"`
	Tool            string `dynamodbav:"tool" json:"tool,omitempty"`
	Decision        string `dynamodbav:"decision" json:"decision"`
	Rule            string `dynamodbav:"rule" json:"rule,omitempty"`
	ArgumentsSHA256 string `dynamodbav:"arguments_sha256" json:"arguments_sha256,omitempty"`
	By              string `dynamodbav:"by" json:"by"`
	Prev            string `dynamodbav:"prev" json:"prev"` // Hash of entry Seq-1; empty for the first
}

// Decisions an Entry records.
const (
	Denied      = "deny"
	Asked       = "ask"
	Approved    = "approval_granted"
	Refused     = "approval_refused"
	Quarantined = "quarantine"
	Approve     = "approve" // mcpfn-catalog approve
)

// Limits of an entry's free text: a longer one is cut.
const (
	maxTool = 128
	maxText = 256
)

// ErrInvalid is an entry Append refuses: no catalog id or no decision.
var ErrInvalid = errors.New("audit: invalid entry")

// Hash is the hex SHA-256 of e's JSON encoding (its fields in the order
// above, Prev included), the value the next entry's Prev holds.
func Hash(e Entry) string {
	b, _ := json.Marshal(e) // strings and an int64 only: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clean cuts e's free text and sets At from now.
func clean(e Entry, now time.Time) (Entry, error) {
	if e.CatalogID == "" || e.Decision == "" {
		return Entry{}, fmt.Errorf("%w: catalog id and decision are required", ErrInvalid)
	}
	e.At = now.UTC().Format(time.RFC3339Nano)
	e.Tool = cut(e.Tool, maxTool)
	e.Rule = cut(e.Rule, maxText)
	e.By = cut(e.By, maxText)
	return e, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		n--
	}
	return s[:n]
}
