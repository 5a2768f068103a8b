package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Model names (DESIGN.md, "A model-safe name beside every name").
const (
	maxModelName = 64 // bytes of ^[a-zA-Z0-9_-]{1,64}$
	// modelDigits is how many hex digits of sha256(name) the default
	// mapping appends; a contested mapped name takes one more each time.
	modelDigits = 12
	// maxModelExceptions bounds the head's record of model names that are
	// not their tool's default (9 bytes each).
	maxModelExceptions = 16384
)

const reasonNoModelName = "no model-safe name is free: every candidate is another tool's"

func modelChar(r rune) bool {
	return r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// validModelName reports whether s matches ^[a-zA-Z0-9_-]{1,64}$.
func validModelName(s string) bool {
	if s == "" || len(s) > maxModelName {
		return false
	}
	for _, r := range s {
		if !modelChar(r) {
			return false
		}
	}
	return true
}

// mappedName is name with every character outside [A-Za-z0-9_-] replaced
// by '_', cut so the result fits 64 bytes, then '_' and the first digits
// hex digits of sha256(name).
func mappedName(name string, digits int) string {
	sum := sha256.Sum256([]byte(name))
	keep := maxModelName - 1 - digits
	b := make([]byte, 0, maxModelName)
	for _, r := range name {
		if len(b) == keep {
			break
		}
		if modelChar(r) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	b = append(b, '_')
	return string(append(b, hex.EncodeToString(sum[:])[:digits]...))
}

// defaultModelName is name itself when it is model-safe, else its mapped
// name with modelDigits digits. A stored tool without a recorded model
// name has this one.
func defaultModelName(name string) string {
	if validModelName(name) {
		return name
	}
	return mappedName(name, modelDigits)
}

// mappedDigits returns the hex digits a mapped name ends with (after its
// last '_', modelDigits to 63 lowercase hex digits), or "" when s cannot
// be a mapped name. They are a prefix of sha256 of the tool's name.
func mappedDigits(s string) string {
	i := strings.LastIndexByte(s, '_')
	if i < 0 || len(s) > maxModelName || !validModelName(s) {
		return ""
	}
	d := s[i+1:]
	if len(d) < modelDigits {
		return ""
	}
	for j := range len(d) {
		if c := d[j]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return d
}

// prior is what assigning model names knows of the version being replaced.
type prior struct {
	// exceptions maps the first 8 bytes of sha256(name) to the hex digits
	// of the mapped name the tool held instead of its default.
	exceptions map[uint64]int
	// kept reports whether name was in the version; it is asked only to
	// settle a name two tools want. Nil: there is no version.
	kept func(name string) (bool, error)
}

// priorOf is the prior of a version whose model names are known: models
// maps each of its tool names to its model name.
func priorOf(models map[string]string) prior {
	pr := prior{exceptions: map[uint64]int{}}
	for name, m := range models {
		if m != defaultModelName(name) {
			if d := mappedDigits(m); d != "" {
				pr.exceptions[nameKey(name)] = len(d)
			}
		}
	}
	pr.kept = func(name string) (bool, error) { _, ok := models[name]; return ok, nil }
	return pr
}

// nameKey is the first 8 bytes of sha256(name), as the name index holds them.
func nameKey(name string) uint64 {
	sum := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(sum[:8])
}

// assignModelNames gives every entry a model name, collision-free:
//  1. a tool that held a mapped name other than its default keeps it;
//  2. every other tool takes its default unless it is held; of tools
//     wanting the same default, a tool of the replaced version wins, else
//     the one whose name it is, else the smallest name;
//  3. the rest, by name, take their mapped name with the fewest digits
//     (modelDigits to 63) that is free, or are refused.
func (p *prepared) assignModelNames(pr prior) error {
	taken := make(map[string]bool, len(p.entries))
	claim := func(i int, m string) {
		p.entries[i].tool.ModelName, taken[m] = m, true
	}
	want := make(map[string][]int, len(p.entries)) // default model name → entries wanting it
	for i, e := range p.entries {
		if d, ok := pr.exceptions[binary.BigEndian.Uint64(e.hash[:8])]; ok && d >= modelDigits && d < maxModelName {
			if m := mappedName(e.tool.Name, d); !taken[m] {
				claim(i, m)
				continue
			}
		}
		m := defaultModelName(e.tool.Name)
		want[m] = append(want[m], i)
	}
	var rest []int
	for m, group := range want {
		if taken[m] {
			rest = append(rest, group...)
			continue
		}
		w, err := p.settle(m, group, pr)
		if err != nil {
			return err
		}
		claim(group[w], m)
		rest = append(rest, slices.Delete(group, w, w+1)...)
	}
	slices.SortFunc(rest, func(a, b int) int { return cmp.Compare(p.entries[a].tool.Name, p.entries[b].tool.Name) })
	refuse := map[int]bool{}
	for _, i := range rest {
		name := p.entries[i].tool.Name
		refuse[i] = true
		for d := modelDigits; d < maxModelName; d++ {
			if m := mappedName(name, d); !taken[m] {
				claim(i, m)
				delete(refuse, i)
				break
			}
		}
	}
	if len(refuse) == 0 {
		return nil
	}
	kept := p.entries[:0]
	for i, e := range p.entries {
		if refuse[i] {
			p.refused = append(p.refused, truncRefusal(mcp.Refusal{Name: e.tool.Name, Reason: reasonNoModelName}))
			continue
		}
		e.seq = len(kept)
		kept = append(kept, e)
	}
	p.entries = kept
	return nil
}

// settle returns which of group (entries wanting model name m) takes it.
func (p *prepared) settle(m string, group []int, pr prior) (int, error) {
	if len(group) == 1 {
		return 0, nil
	}
	slices.SortFunc(group, func(a, b int) int { return cmp.Compare(p.entries[a].tool.Name, p.entries[b].tool.Name) })
	if pr.kept != nil {
		for w, i := range group {
			ok, err := pr.kept(p.entries[i].tool.Name)
			if err != nil {
				return 0, err
			}
			if ok {
				return w, nil
			}
		}
	}
	for w, i := range group {
		if p.entries[i].tool.Name == m {
			return w, nil
		}
	}
	return 0, nil
}
