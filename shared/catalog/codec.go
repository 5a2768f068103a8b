package catalog

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

var errBadManifest = errors.New("catalog: malformed stored manifest")

// encode frames m: the format byte; the writers, each length-prefixed;
// per tool its name hash, field hash, model byte, hints byte and writer
// index; then the refusals' names and reasons, length-prefixed. Counts and
// lengths are uvarints.
func (m *manifest) encode() []byte {
	b := []byte{manifestFormat}
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(m.writers)))
	for _, w := range m.writers {
		str(w)
	}
	b = binary.AppendUvarint(b, uint64(len(m.tools)))
	for _, e := range m.tools {
		b = append(b, e.name[:]...)
		b = append(b, e.fields[:]...)
		b = append(b, e.model, e.hints)
		b = binary.AppendUvarint(b, uint64(e.writer))
	}
	b = binary.AppendUvarint(b, uint64(len(m.refused)))
	for _, r := range m.refused {
		str(r.Name)
		str(r.Reason)
	}
	return b
}

// decodeManifest reverses encode.
func decodeManifest(b []byte) (*manifest, error) {
	if len(b) == 0 || b[0] != manifestFormat {
		return nil, fmt.Errorf("%w: format %v", errBadManifest, b[:min(len(b), 1)])
	}
	b = b[1:]
	// uv reads a count or length, which cannot pass the bytes left.
	uv := func() (int, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return 0, errBadManifest
		}
		b = b[k:]
		return int(n), nil
	}
	str := func() (string, error) {
		n, err := uv()
		if err != nil || n > len(b) {
			return "", errBadManifest
		}
		s := string(b[:n])
		b = b[n:]
		return s, nil
	}
	m := &manifest{}
	n, err := uv()
	if err != nil {
		return nil, err
	}
	for range n {
		w, err := str()
		if err != nil {
			return nil, err
		}
		m.writers = append(m.writers, w)
	}
	if n, err = uv(); err != nil {
		return nil, err
	}
	const fixed = nameKeyLen + fieldHashLen + 2
	m.tools = make([]mentry, 0, n)
	for range n {
		if len(b) < fixed {
			return nil, fmt.Errorf("%w: tool %d truncated", errBadManifest, len(m.tools))
		}
		var e mentry
		copy(e.name[:], b)
		copy(e.fields[:], b[nameKeyLen:])
		e.model, e.hints = b[fixed-2], b[fixed-1]
		b = b[fixed:]
		w, k := binary.Uvarint(b)
		if k <= 0 || w >= uint64(len(m.writers)) {
			return nil, fmt.Errorf("%w: tool %d's writer", errBadManifest, len(m.tools))
		}
		e.writer, b = int(w), b[k:]
		m.tools = append(m.tools, e)
	}
	if n, err = uv(); err != nil {
		return nil, err
	}
	m.refused = make([]mcp.Refusal, 0, n)
	for range n {
		name, err := str()
		if err != nil {
			return nil, err
		}
		reason, err := str()
		if err != nil {
			return nil, err
		}
		m.refused = append(m.refused, mcp.Refusal{Name: name, Reason: reason})
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBadManifest, len(b))
	}
	return m, nil
}

var errBadChanges = errors.New("catalog: malformed stored changes")

// decodeStoredChanges decodes the head's changes attribute by its type: a
// map with Changes' dynamodbav names and every list present, as Put
// writes it, or the binary framing of versions stored before
// (decodeChanges).
func decodeStoredChanges(v types.AttributeValue) (*Changes, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberB:
		return decodeChanges(v.Value)
	case *types.AttributeValueMemberM:
		for k, e := range v.Value {
			if err := checkChangesEntry(k, e); err != nil {
				return nil, err
			}
		}
		var c Changes
		if err := attributevalue.Unmarshal(v, &c); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadChanges, err)
		}
		if c.Added == nil || c.Removed == nil || c.Changed == nil ||
			c.AddedCount < len(c.Added) || c.RemovedCount < len(c.Removed) || c.ChangedCount < len(c.Changed) {
			return nil, fmt.Errorf("%w: a list missing or longer than its count", errBadChanges)
		}
		return &c, nil
	}
	return nil, fmt.Errorf("%w: attribute of type %T", errBadChanges, v)
}

// checkChangesEntry fails unless k is a key of a stored Changes map and
// v, if a list, holds only strings (attributevalue would convert numbers).
func checkChangesEntry(k string, v types.AttributeValue) error {
	switch k {
	case "added_count", "removed_count", "changed_count":
		return nil // attributevalue decodes only a number into an int
	case "added", "removed", "changed":
		l, ok := v.(*types.AttributeValueMemberL)
		if !ok {
			return fmt.Errorf("%w: %s is %T, want a list", errBadChanges, k, v)
		}
		for _, e := range l.Value {
			if _, ok := e.(*types.AttributeValueMemberS); !ok {
				return fmt.Errorf("%w: %s holds %T, want strings", errBadChanges, k, e)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown key %q", errBadChanges, k)
}

// decodeChanges decodes the binary framing of versions stored before the
// changes attribute was a map: the three counts as uvarints, then per list
// the number of names kept and each name, length-prefixed.
func decodeChanges(b []byte) (*Changes, error) {
	uv := func() (int, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > 1<<31 {
			return 0, errBadChanges
		}
		b = b[k:]
		return int(n), nil
	}
	var counts [3]int
	for i := range counts {
		n, err := uv()
		if err != nil {
			return nil, err
		}
		counts[i] = n
	}
	var lists [3][]string
	for i := range lists {
		n, err := uv()
		if err != nil || n > len(b) {
			return nil, errBadChanges
		}
		lists[i] = make([]string, 0, n)
		for range n {
			m, err := uv()
			if err != nil || m > len(b) {
				return nil, errBadChanges
			}
			lists[i] = append(lists[i], string(b[:m]))
			b = b[m:]
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBadChanges, len(b))
	}
	return &Changes{Added: lists[0], Removed: lists[1], Changed: lists[2],
		AddedCount: counts[0], RemovedCount: counts[1], ChangedCount: counts[2]}, nil
}

// toolFields are a tool's stored fields in frame order: name, description,
// input schema, then title, output schema, annotations (encodeAnnotations)
// and meta, which a tool without them omits.
func toolFields(t mcp.Tool) [][]byte {
	f := [][]byte{[]byte(t.Name), []byte(t.Description), t.InputSchema}
	if hasNewFields(t) {
		f = append(f, []byte(t.Title), t.OutputSchema, encodeAnnotations(t.Annotations), t.Meta)
	}
	return f
}

// encodeTool frames a tool's fields (toolFields), each a uvarint length
// then the bytes, so schemas survive byte for byte (JSON would re-compact
// them).
func encodeTool(t mcp.Tool) []byte {
	var b []byte
	for _, f := range toolFields(t) {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

var errBadTool = errors.New("catalog: malformed stored tool")

// decodeTool reverses encodeTool: 3 fields, or 7.
func decodeTool(b []byte) (mcp.Tool, error) {
	var f [][]byte
	for len(b) > 0 && len(f) < 7 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return mcp.Tool{}, fmt.Errorf("%w: field %d truncated", errBadTool, len(f))
		}
		f, b = append(f, b[k:k+int(n)]), b[k+int(n):]
	}
	if len(b) != 0 || len(f) != 3 && len(f) != 7 {
		return mcp.Tool{}, fmt.Errorf("%w: %d fields and %d trailing bytes", errBadTool, len(f), len(b))
	}
	t := mcp.Tool{Name: string(f[0]), Description: string(f[1]), InputSchema: bytes.Clone(f[2])}
	if len(f) == 7 {
		a, err := decodeAnnotations(f[5])
		if err != nil {
			return mcp.Tool{}, err
		}
		t.Title, t.OutputSchema, t.Annotations, t.Meta = string(f[3]), nonEmpty(f[4]), a, nonEmpty(f[6])
	}
	return t, nil
}

// nonEmpty is a copy of b, nil when b is empty.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// encodeAnnotations stores a: one byte per hint (read-only, destructive,
// idempotent, open-world; 0 absent, 1 false, 2 true), then Other's bytes.
// Nil is no bytes.
func encodeAnnotations(a *mcp.Annotations) []byte {
	if a == nil {
		return nil
	}
	b := make([]byte, 4, 4+len(a.Other))
	for i, h := range []*bool{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint} {
		if h != nil {
			b[i] = 1
			if *h {
				b[i] = 2
			}
		}
	}
	return append(b, a.Other...)
}

// decodeAnnotations reverses encodeAnnotations.
func decodeAnnotations(b []byte) (*mcp.Annotations, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: annotations of %d bytes", errBadTool, len(b))
	}
	var hints [4]*bool
	for i := range hints {
		switch b[i] {
		case 0:
		case 1, 2:
			v := b[i] == 2
			hints[i] = &v
		default:
			return nil, fmt.Errorf("%w: annotation hint %d is %d", errBadTool, i, b[i])
		}
	}
	return &mcp.Annotations{ReadOnlyHint: hints[0], DestructiveHint: hints[1], IdempotentHint: hints[2],
		OpenWorldHint: hints[3], Other: nonEmpty(b[4:])}, nil
}

func gzipTool(t mcp.Tool) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(encodeTool(t))                           // a bytes.Buffer does not fail
	_ = zw.Close()
	return buf.Bytes()
}

// maxToolBytes bounds a decompressed tool: far above any tool a listing
// within mcp.MaxResponseBytes yields, even after JSON re-escaping.
const maxToolBytes = 8 * mcp.MaxResponseBytes

// gunzipTool reverses gzipTool.
func gunzipTool(z []byte) (mcp.Tool, error) {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return mcp.Tool{}, fmt.Errorf("%w: %v", errBadTool, err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(zr, maxToolBytes+1)); err != nil {
		return mcp.Tool{}, fmt.Errorf("%w: %v", errBadTool, err)
	}
	if buf.Len() > maxToolBytes {
		return mcp.Tool{}, fmt.Errorf("%w: over %d bytes decompressed", errBadTool, maxToolBytes)
	}
	return decodeTool(buf.Bytes())
}

// nameIndex is the sorted first eight bytes of each name's SHA-256.
func nameIndex(entries []entry) []byte {
	hs := make([]uint64, len(entries))
	for i, e := range entries {
		hs[i] = binary.BigEndian.Uint64(e.hash[:8])
	}
	slices.Sort(hs)
	b := make([]byte, 0, 8*len(hs))
	for _, h := range hs {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return b
}

// indexContains reports whether name's hash is in a nameIndex.
func indexContains(index []byte, name string) bool {
	_, ok := indexFind(index, name)
	return ok
}

// indexFind returns the position of name's hash in a nameIndex.
func indexFind(index []byte, name string) (int, bool) {
	sum := sha256.Sum256([]byte(name))
	want := binary.BigEndian.Uint64(sum[:8])
	n := len(index) / 8
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if binary.BigEndian.Uint64(index[8*mid:]) < want {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < n && binary.BigEndian.Uint64(index[8*lo:]) == want
}

// modelExceptions encodes the entries whose model name is not their
// default: per entry, sorted, the first 8 bytes of sha256(name) and the
// digit count of its mapped name (9 bytes). ok is false past limit entries.
func modelExceptions(entries []entry, limit int) (b []byte, ok bool) {
	type exc struct {
		key    uint64
		digits byte
	}
	var xs []exc
	for _, e := range entries {
		if m := e.tool.ModelName; m != defaultModelName(e.tool.Name) {
			xs = append(xs, exc{binary.BigEndian.Uint64(e.hash[:8]), byte(len(mappedDigits(m)))})
		}
	}
	if len(xs) > limit {
		return nil, false
	}
	slices.SortFunc(xs, func(a, b exc) int { return cmp.Compare(a.key, b.key) })
	for _, x := range xs {
		b = append(binary.BigEndian.AppendUint64(b, x.key), x.digits)
	}
	return b, true
}

// decodeModelExceptions reverses modelExceptions.
func decodeModelExceptions(b []byte) (map[uint64]int, error) {
	if len(b)%9 != 0 {
		return nil, fmt.Errorf("catalog: model name exceptions of %d bytes, not a multiple of 9", len(b))
	}
	m := make(map[uint64]int, len(b)/9)
	for ; len(b) > 0; b = b[9:] {
		m[binary.BigEndian.Uint64(b)] = int(b[8])
	}
	return m, nil
}
