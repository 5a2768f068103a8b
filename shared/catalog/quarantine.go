package catalog

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// On-change modes (Discovery.OnChange): OnChangeAccept stores every
// listing as it comes (the default); OnChangeQuarantine stores new and
// changed tools quarantined until approved.
const (
	OnChangeAccept     = "accept"
	OnChangeQuarantine = "quarantine"
)

// Sentinels. ErrInvalidOnChange: an on_change value other than the two
// modes. ErrQuarantineUnsupported: the store cannot quarantine (Dir).
// ErrQuarantineFull: a discovery would quarantine more than
// MaxQuarantineBytes of tools; nothing of it is stored.
var (
	ErrInvalidOnChange       = errors.New("catalog: invalid on_change")
	ErrQuarantineUnsupported = errors.New("catalog: quarantine not supported by this store")
	ErrQuarantineFull        = errors.New("catalog: too many quarantined tools")
)

// MaxQuarantineBytes bounds the head's quarantine: each tool counts its
// name, its reason and quarantineEntryBytes.
const MaxQuarantineBytes = 64 << 10

const (
	quarantineEntryBytes = 96
	pinPartBytes         = 8 // of each part's hash kept as approved
	reasonNew            = "new tool"
)

// ValidateOnChange reports whether mode is "", OnChangeAccept or
// OnChangeQuarantine; the error wraps ErrInvalidOnChange.
func ValidateOnChange(mode string) error {
	switch mode {
	case "", OnChangeAccept, OnChangeQuarantine:
		return nil
	}
	return fmt.Errorf("%w: %q (want %q or %q)", ErrInvalidOnChange, mode, OnChangeAccept, OnChangeQuarantine)
}

// DefinitionPart is one part of a tool's definition as quarantine
// compares it: its name ("description") and the hash of its canonical form.
type DefinitionPart struct{ Name, Hash string }

// Definer gives a tool's definition by part, always the same parts in the
// same order (policy.Parts).
type Definer func(mcp.Tool) []DefinitionPart

// Quarantined is a tool stored but not callable until approved: its name
// and why ("new tool", or the parts that changed since it was approved,
// "description, input schema").
type Quarantined struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// quarantineItem is one entry of the head's quarantine map, keyed by
// quarantineKey of the name. Approved holds the approved definition's
// part hashes, pinPartBytes each; nil for a new tool.
type quarantineItem struct {
	Name     string `dynamodbav:"n"`
	Reason   string `dynamodbav:"r"`
	Approved []byte `dynamodbav:"a,omitempty"`
}

// quarantineKey is the quarantine map's key for the tool named name.
func quarantineKey(name string) string {
	h := sha256Of(name)
	return hex.EncodeToString(h[:8])
}

// pinned is def's parts as stored: pinPartBytes of each hash.
func pinned(def []DefinitionPart) []byte {
	out := make([]byte, 0, len(def)*pinPartBytes)
	for _, p := range def {
		b, _ := hex.DecodeString(p.Hash)
		b = append(b, make([]byte, pinPartBytes)...)
		out = append(out, b[:pinPartBytes]...)
	}
	return out
}

// changedParts names the parts of now that differ from approved; none
// when they are the same.
func changedParts(now []DefinitionPart, approved []byte) string {
	cur := pinned(now)
	var names []string
	for i, p := range now {
		lo, hi := i*pinPartBytes, (i+1)*pinPartBytes
		if hi > len(approved) || string(cur[lo:hi]) != string(approved[lo:hi]) {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}

// quarantineList is q sorted by name; nil when q is empty.
func quarantineList(q map[string]quarantineItem) []Quarantined {
	if len(q) == 0 {
		return nil
	}
	out := make([]Quarantined, 0, len(q))
	for _, e := range q {
		out = append(out, Quarantined{Name: e.Name, Reason: e.Reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// onChange is the mode a Put of d over h records: d's, else h's.
func onChange(h head, d Discovery) string {
	if d.OnChange != "" {
		return d.OnChange
	}
	return h.onChange
}

// quarantineOf is the quarantine of p's tools over h's version, whose
// manifest pl.baseM holds and whose diff d is: a tool quarantined in h
// stays so until its definition is the approved one again; a new tool,
// or one whose definition differs from h's, is quarantined. It is empty
// unless both h and p are in quarantine mode: the first discovery in
// that mode approves what it finds.
func (s *Dynamo) quarantineOf(ctx context.Context, id string, h head, p prepared, pl *plan, d baseDiff) (map[string]quarantineItem, error) {
	if onChange(h, p.d) != OnChangeQuarantine || h.onChange != OnChangeQuarantine || pl.baseM == nil {
		return nil, nil
	}
	if p.d.Define == nil {
		return nil, fmt.Errorf("%w: quarantine needs a Definer", ErrQuarantineUnsupported)
	}
	q := map[string]quarantineItem{}
	for _, i := range d.addedAt {
		t := p.entries[i].tool
		q[quarantineKey(t.Name)] = quarantineItem{Name: t.Name, Reason: reasonNew}
	}
	for _, e := range p.entries {
		k := quarantineKey(e.tool.Name)
		was, ok := h.quarantine[k]
		if !ok || was.Name != e.tool.Name {
			continue
		}
		switch {
		case was.Approved == nil:
			q[k] = was
		default:
			if r := changedParts(p.d.Define(e.tool), was.Approved); r != "" {
				q[k] = quarantineItem{Name: e.tool.Name, Reason: r, Approved: was.Approved}
			}
		}
	}
	var refs []ref
	var at []int
	for _, c := range d.changedAt {
		if _, ok := q[quarantineKey(p.entries[c[0]].tool.Name)]; ok {
			continue
		}
		if _, ok := h.quarantine[quarantineKey(p.entries[c[0]].tool.Name)]; ok {
			continue // compared with its approved definition above
		}
		refs = append(refs, pl.baseM.ref(c[1]))
		at = append(at, c[0])
	}
	olds := make([]mcp.Tool, len(refs))
	err := parallel(ctx, len(refs), func(ctx context.Context, n int) error {
		item, err := s.getItem(ctx, contentPK(id, toolShard(refs[n].name[:], h.shards)), contentSortKey(refs[n]))
		if err != nil {
			return err
		}
		if item == nil {
			return errVersionGone
		}
		olds[n], err = decodeToolItem(item)
		return err
	})
	if err != nil {
		return nil, err
	}
	for n, i := range at {
		t := p.entries[i].tool
		approved := pinned(p.d.Define(olds[n]))
		if r := changedParts(p.d.Define(t), approved); r != "" {
			q[quarantineKey(t.Name)] = quarantineItem{Name: t.Name, Reason: r, Approved: approved}
		}
	}
	size := 0
	for _, e := range q {
		size += len(e.Name) + len(e.Reason) + quarantineEntryBytes
	}
	if size > MaxQuarantineBytes {
		return nil, fmt.Errorf("%w: %d tools of %q, %d bytes, at most %d", ErrQuarantineFull, len(q), id, size, MaxQuarantineBytes)
	}
	return q, nil
}

// errVersionGone: an item of the version a Put plans over is missing; the
// version is being deleted and the head must be read again.
var errVersionGone = errors.New("catalog: version being deleted")

// setQuarantine sets q as the head's quarantine in u, or removes it when
// it is empty.
func setQuarantine(u expression.UpdateBuilder, q map[string]quarantineItem) (expression.UpdateBuilder, error) {
	if len(q) == 0 {
		return u.Remove(name(attrQuarantine)), nil
	}
	v, err := attributevalue.Marshal(q)
	if err != nil {
		return u, fmt.Errorf("catalog: quarantine: %w", err)
	}
	return u.Set(name(attrQuarantine), expression.Value(v)), nil
}

// Approval is what Approve did: the version whose tools it approved, and
// those tools, sorted by name (none when nothing named was quarantined).
type Approval struct {
	Version string
	Tools   []Quarantined
}

// Approve makes the named tools of id's current version callable, or
// every quarantined tool when all is set: one conditional UpdateItem of
// the head after reading it, none when there is nothing to approve. A
// named tool that is not quarantined is left out.
func (s *Dynamo) Approve(ctx context.Context, id string, names []string, all bool) (Approval, error) {
	if err := ValidateID(id); err != nil {
		return Approval{}, err
	}
	for range maxRounds {
		h, err := s.head(ctx, id)
		if err != nil {
			return Approval{}, err
		}
		if !h.exists || h.version == "" {
			return Approval{}, fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		drop := map[string]quarantineItem{}
		for k, e := range h.quarantine {
			if all {
				drop[k] = e
			}
		}
		for _, n := range names {
			if e, ok := h.quarantine[quarantineKey(n)]; ok && e.Name == n {
				drop[quarantineKey(n)] = e
			}
		}
		if len(drop) == 0 {
			return Approval{Version: h.version}, nil
		}
		var u expression.UpdateBuilder
		for k := range drop {
			u = u.Remove(name(attrQuarantine + "." + k))
		}
		cond := name(attrVersion).Equal(str(h.version))
		for k := range drop {
			cond = cond.And(expression.AttributeExists(name(attrQuarantine + "." + k)))
		}
		ok, err := s.updateHead(ctx, id, u, cond)
		if err != nil {
			return Approval{}, err
		}
		if ok {
			return Approval{Version: h.version, Tools: quarantineList(drop)}, nil
		}
	}
	return Approval{}, fmt.Errorf("%w: catalog %q changed %d times during one approval", ErrUnavailable, id, maxRounds)
}

// decodeQuarantine reads the head's quarantine attribute; nil when absent.
func decodeQuarantine(v types.AttributeValue) (map[string]quarantineItem, error) {
	if v == nil {
		return nil, nil
	}
	var q map[string]quarantineItem
	if err := attributevalue.Unmarshal(v, &q); err != nil {
		return nil, fmt.Errorf("catalog: quarantine: %w", err)
	}
	return q, nil
}

// quarantined reports whether the tool m found for toolName is
// quarantined in h, and why.
func (h *head) quarantined(m Membership, toolName string) (bool, string) {
	if !m.Found || len(h.quarantine) == 0 {
		return false, ""
	}
	n := toolName
	if m.Name != "" {
		n = m.Name
	}
	e, ok := h.quarantine[quarantineKey(n)]
	if !ok || e.Name != n {
		return false, ""
	}
	return true, e.Reason
}
