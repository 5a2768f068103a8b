package catalog

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// The content layout (docs/catalog.md): a version is a manifest in its
// marker (and chunk items past manifestChunkBytes) that references tool
// items in the catalog's shared partitions; an item is keyed by its
// tool's name hash and the version that wrote it, so versions share every
// item whose tool they did not change.

// manifestFormat is the first byte of an encoded manifest.
const manifestFormat = 1

// manifestChunkBytes is the most manifest bytes one item carries.
const manifestChunkBytes = 300_000

// nameKeyLen is the bytes of sha256(name) a manifest and an item key use.
const nameKeyLen = 16

// manifest is one version: the items its tools are stored in, in listing
// order, and its refusals.
type manifest struct {
	writers []string // versions whose items the tools reference
	tools   []mentry
	refused []mcp.Refusal
}

// mentry is one tool of a manifest.
type mentry struct {
	name   [nameKeyLen]byte   // sha256(name), first 16 bytes
	fields [fieldHashLen]byte // fieldHash
	model  byte               // 0: the default model name; else its mapped name's digit count
	hints  byte               // hintsByte of its annotations
	writer int                // index into writers: the item is keyed by it
}

// ref is the key of one tool item: the name hash and the writing version.
type ref struct {
	name   [nameKeyLen]byte
	writer string
}

func (m *manifest) ref(i int) ref { return ref{m.tools[i].name, m.writers[m.tools[i].writer]} }

// refs is the set of items m references.
func (m *manifest) refs() map[ref]bool {
	set := make(map[ref]bool, len(m.tools))
	for i := range m.tools {
		set[m.ref(i)] = true
	}
	return set
}

// chunks splits an encoded manifest into pieces of at most size bytes;
// at least one.
func chunks(b []byte, size int) [][]byte {
	out := [][]byte{}
	for len(b) > size {
		out = append(out, b[:size])
		b = b[size:]
	}
	return append(out, b)
}

// modelByte records e's model name in a manifest: 0 for its default,
// else the digit count of its mapped name.
func modelByte(t mcp.Tool) byte {
	if t.ModelName == defaultModelName(t.Name) {
		return 0
	}
	return byte(len(mappedDigits(t.ModelName)))
}

// modelOf is the model name a manifest's model byte records for name.
func modelOf(name string, b byte) string {
	if b == 0 {
		return defaultModelName(name)
	}
	return mappedName(name, int(b))
}

// hintsByte packs a's four hints, two bits each from the low bits:
// read-only, destructive, idempotent, open-world; 0 absent, 1 false,
// 2 true. Nil annotations are 0.
func hintsByte(a *mcp.Annotations) byte {
	var b byte
	if a == nil {
		return 0
	}
	for i, h := range []*bool{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint} {
		if h != nil {
			v := byte(1)
			if *h {
				v = 2
			}
			b |= v << (2 * i)
		}
	}
	return b
}

// hintsOf reverses hintsByte; nil when no hint is set.
func hintsOf(b byte) *mcp.Annotations {
	if b == 0 {
		return nil
	}
	var hs [4]*bool
	for i := range hs {
		switch (b >> (2 * i)) & 3 {
		case 1:
			hs[i] = new(bool)
		case 2:
			v := true
			hs[i] = &v
		}
	}
	return &mcp.Annotations{ReadOnlyHint: hs[0], DestructiveHint: hs[1], IdempotentHint: hs[2], OpenWorldHint: hs[3]}
}

// nameHints is one hintsByte per entry in the order of nameIndex.
func nameHints(entries []entry) []byte {
	type kh struct {
		key  uint64
		hint byte
	}
	ks := make([]kh, len(entries))
	for i, e := range entries {
		ks[i] = kh{binary.BigEndian.Uint64(e.hash[:8]), hintsByte(e.tool.Annotations)}
	}
	slices.SortStableFunc(ks, func(a, b kh) int { return cmp.Compare(a.key, b.key) })
	b := make([]byte, len(ks))
	for i, k := range ks {
		b[i] = k.hint
	}
	return b
}

// contentPK is the partition key of one of a catalog's tool partitions.
func contentPK(id string, shard int) string { return id + "#c#" + fmt.Sprint(shard) }

// contentSortKey is the sort key of the tool item r names.
func contentSortKey(r ref) string { return "t#" + hex.EncodeToString(r.name[:]) + "#" + r.writer }

// parseContentSortKey reverses contentSortKey.
func parseContentSortKey(sk string) (ref, bool) {
	var r ref
	rest, ok := strings.CutPrefix(sk, "t#")
	if !ok || len(rest) < 2*nameKeyLen+2 || rest[2*nameKeyLen] != '#' {
		return r, false
	}
	if n, err := hex.Decode(r.name[:], []byte(rest[:2*nameKeyLen])); err != nil || n != nameKeyLen {
		return r, false
	}
	r.writer = rest[2*nameKeyLen+1:]
	return r, true
}

// chunkSortKey is the sort key of a manifest's chunk n ≥ 1.
func chunkSortKey(version string, n int) string { return fmt.Sprintf("m#%s#%04d", version, n) }
