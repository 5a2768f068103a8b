package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// toolHashLen is the bytes of a tool's content hash: the first 8 bytes of
// SHA-256 of its stored fields.
const toolHashLen = 8

// changeNameCost is what one listed name counts against MaxChangeBytes
// beyond its length: JSON quotes and comma, or the stored framing.
const changeNameCost = 8

// fieldHashLen is the bytes of a tool's field hash (fieldHash), which
// manifests record; toolHashLen is its prefix, stored on tool items.
const fieldHashLen = 16

// fieldHash is the first 16 bytes of SHA-256 over every stored field of t
// (name, description, input schema, title, output schema, annotations,
// meta), each framed by its length. The model name is not in it.
func fieldHash(t mcp.Tool) [fieldHashLen]byte {
	h := sha256.New()
	for _, f := range [][]byte{[]byte(t.Name), []byte(t.Description), t.InputSchema,
		[]byte(t.Title), t.OutputSchema, encodeAnnotations(t.Annotations), t.Meta} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
		h.Write(f)
	}
	var sum [fieldHashLen]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// differ diffs p's entries against a replaced version whose tools are
// fed to old one at a time.
type differ struct {
	entries map[[sha256.Size]byte]int // name hash → index into p.entries
	hashes  [][toolHashLen]byte
	seen    []bool
	removed []string
	changed []string
	names   func(i int) string
}

func newDiffer(p prepared) *differ {
	d := &differ{
		entries: make(map[[sha256.Size]byte]int, len(p.entries)),
		hashes:  make([][toolHashLen]byte, len(p.entries)),
		seen:    make([]bool, len(p.entries)),
		names:   func(i int) string { return p.entries[i].tool.Name },
	}
	for i, e := range p.entries {
		d.entries[e.hash] = i
		d.hashes[i] = e.toolHash
	}
	return d
}

// old records one tool of the replaced version: its name hash, content
// hash and name; name is called only for a removed tool.
func (d *differ) old(nameHash [sha256.Size]byte, hash [toolHashLen]byte, name func() (string, error)) error {
	i, ok := d.entries[nameHash]
	if !ok {
		n, err := name()
		if err != nil {
			return err
		}
		d.removed = append(d.removed, n)
		return nil
	}
	d.seen[i] = true
	if d.hashes[i] != hash {
		d.changed = append(d.changed, d.names(i))
	}
	return nil
}

// changes is the bounded diff once every old tool was recorded.
func (d *differ) changes() *Changes {
	var added []string
	for i, seen := range d.seen {
		if !seen {
			added = append(added, d.names(i))
		}
	}
	return boundChanges(added, d.removed, d.changed)
}

// allAdded is the diff of a version that replaces none.
func allAdded(p prepared) *Changes { return newDiffer(p).changes() }

// boundChanges sorts the lists and cuts them to MaxChangeBytes, a name
// from each list in turn, keeping the full counts.
func boundChanges(added, removed, changed []string) *Changes {
	lists := [3][]string{added, removed, changed}
	c := &Changes{AddedCount: len(added), RemovedCount: len(removed), ChangedCount: len(changed)}
	var kept [3]int
	budget := MaxChangeBytes
	for k := range lists {
		slices.Sort(lists[k])
	}
fill:
	for more := true; more; {
		more = false
		for k, l := range lists {
			if kept[k] == len(l) {
				continue
			}
			cost := len(l[kept[k]]) + changeNameCost
			if cost > budget {
				break fill
			}
			budget -= cost
			kept[k]++
			more = true
		}
	}
	c.Added = append([]string{}, lists[0][:kept[0]]...)
	c.Removed = append([]string{}, lists[1][:kept[1]]...)
	c.Changed = append([]string{}, lists[2][:kept[2]]...)
	return c
}
