package catalog

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/text"
)

// MaxItemBytes is the largest tool item the store writes, in DynamoDB's
// item-size accounting. It stays below both DynamoDB's 409,600-byte limit
// and moto's 405,000.
const MaxItemBytes = 400_000

// Stored refusals and failures are cut to these lengths in bytes with
// text.Truncate.
const (
	maxRefusalName   = 1024
	maxRefusalReason = 2048
	maxFailureType   = 256
	maxFailureText   = 4096
)

// Reasons the store itself refuses a listed tool.
const (
	reasonDuplicate = "duplicate tool name: the first entry with this name is kept"
	reasonTooLarge  = "tool definition too large to store: %d bytes, %d bytes compressed, over the %d-byte item limit"
)

// timeLayout is fixed-width, so stored times compare as strings.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// keyLayout formats the start time in a version; with the random suffix a
// version is fixed-width and sorts by start time.
const keyLayout = "20060102T150405.000000000Z"

// entry is one accepted tool in its stored form.
type entry struct {
	tool   mcp.Tool
	seq    int
	hash   [sha256.Size]byte // of the name: the item key and the name index
	zipped []byte            // non-nil: stored compressed (encodeTool, gzip)
	// fields is the tool's fieldHash; toolHash its prefix, stored on its item.
	fields   [fieldHashLen]byte
	toolHash [toolHashLen]byte
	size     int // of its item, in DynamoDB's accounting
}

// prepared is a discovery in the form both stores write.
type prepared struct {
	key     string // this discovery's order key; the version it creates
	started time.Time
	entries []entry
	refused []mcp.Refusal
	hash    string
	d       Discovery
	url     sealedURL // d.Schedule's server URL as the head keeps it
}

// newKey returns a version/order key for a discovery started at t: the UTC
// start time to the nanosecond, then random hex that breaks ties.
func newKey(t time.Time) string {
	return fmt.Sprintf("%s-%08x", t.UTC().Format(keyLayout), rand.Uint32())
}

// prepare turns d into its stored form for catalog id: duplicates and
// tools too large even compressed become refusals; id enters the item-size
// accounting. Model names and the hash follow from finish.
func prepare(id string, d Discovery) prepared {
	p := prepared{key: newKey(d.StartedAt), started: d.StartedAt, d: d, entries: make([]entry, 0, len(d.Listing.Tools))}
	for _, r := range d.Listing.Refused {
		p.refused = append(p.refused, truncRefusal(r))
	}
	seen := make(map[string]bool, len(d.Listing.Tools))
	for _, t := range d.Listing.Tools {
		if seen[t.Name] {
			p.refused = append(p.refused, truncRefusal(mcp.Refusal{Name: t.Name, Reason: reasonDuplicate}))
			continue
		}
		seen[t.Name] = true
		e := entry{tool: t, seq: len(p.entries), hash: sha256.Sum256([]byte(t.Name)), fields: fieldHash(t)}
		copy(e.toolHash[:], e.fields[:])
		plain := plainItemSize(id, t)
		e.size = plain
		if plain > MaxItemBytes || !utf8.ValidString(t.Name) || !utf8.ValidString(t.Description) || !utf8.ValidString(t.Title) {
			e.zipped = gzipTool(t)
			e.size = zippedItemSize(id, len(e.zipped))
			if e.size > MaxItemBytes {
				p.refused = append(p.refused, truncRefusal(mcp.Refusal{
					Name:   t.Name,
					Reason: fmt.Sprintf(reasonTooLarge, plain, e.size, MaxItemBytes),
				}))
				continue
			}
		}
		p.entries = append(p.entries, e)
	}
	return p
}

// finish assigns model names against the replaced version's prior (the
// zero prior when there is none) and computes the content hash.
func (p *prepared) finish(pr prior) error {
	if err := p.assignModelNames(pr); err != nil {
		return err
	}
	p.hash = contentHash(p.entries, p.refused)
	return nil
}

// Item-size accounting, after DynamoDB's: attribute names plus values;
// numbers are counted at their largest (21 bytes).
const (
	numberBytes  = 21
	itemOverhead = 64 // slack for the accounting's unknowns
	versionLen   = len(keyLayout) + len("-00000000")
	// The partition key is id#version#shard (shard < maxShards).
	pkSuffixLen    = len("#") + versionLen + len("#") + 2
	toolSortKeyLen = len("t#") + 2*sha256.Size
)

func baseItemSize(id string) int {
	return len(PartitionKey) + len(id) + pkSuffixLen + len(SortKey) + toolSortKeyLen +
		len(attrSeq) + numberBytes + len(TTLAttribute) + numberBytes + itemOverhead
}

// toolHashBytes is what a tool item's tool_hash attribute adds.
const toolHashBytes = len(attrToolHash) + toolHashLen

func refusalItemSize(id string, r mcp.Refusal) int {
	return baseItemSize(id) + len(attrName) + len(r.Name) + len(attrReason) + len(r.Reason)
}

// modelNameBytes is what a model_name attribute may add to an item; it is
// counted before model names are assigned.
const modelNameBytes = len(attrModelName) + maxModelName

func plainItemSize(id string, t mcp.Tool) int {
	return baseItemSize(id) + len(attrName) + len(t.Name) + len(attrDescription) + len(t.Description) +
		len(attrSchema) + len(t.InputSchema) + len(attrTitle) + len(t.Title) +
		len(attrOutputSchema) + len(t.OutputSchema) + len(attrAnnotations) + len(encodeAnnotations(t.Annotations)) +
		len(attrMeta) + len(t.Meta) + modelNameBytes + toolHashBytes
}

func zippedItemSize(id string, n int) int {
	return baseItemSize(id) + len(attrZipped) + n + modelNameBytes + toolHashBytes
}

// hasNewFields reports whether t has a field a tool item gained with
// model-ready catalogs: title, output schema, annotations or meta.
func hasNewFields(t mcp.Tool) bool {
	return t.Title != "" || len(t.OutputSchema) > 0 || t.Annotations != nil || len(t.Meta) > 0
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

// contentHash identifies a listing as stored: accepted tools in order, then
// refusals, then, when any tool has one, every tool's title, output
// schema, annotations and meta. Without those the hash is the one stored
// before tools had them. Model names and server metadata are not part of
// it: model names follow from the listing and the version it replaces.
func contentHash(entries []entry, refused []mcp.Refusal) string {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	field(binary.BigEndian.AppendUint64(nil, uint64(len(entries))))
	for _, e := range entries {
		field([]byte(e.tool.Name))
		field([]byte(e.tool.Description))
		field(e.tool.InputSchema)
	}
	field(binary.BigEndian.AppendUint64(nil, uint64(len(refused))))
	for _, r := range refused {
		field([]byte(r.Name))
		field([]byte(r.Reason))
	}
	// The counted fields above end unambiguously, so a section after them
	// cannot be confused with any listing without one.
	if slices.ContainsFunc(entries, func(e entry) bool { return hasNewFields(e.tool) }) {
		for _, e := range entries {
			field([]byte(e.tool.Title))
			field(e.tool.OutputSchema)
			field(encodeAnnotations(e.tool.Annotations))
			field(e.tool.Meta)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
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

func truncRefusal(r mcp.Refusal) mcp.Refusal {
	return mcp.Refusal{Name: text.Truncate(r.Name, maxRefusalName), Reason: text.Truncate(r.Reason, maxRefusalReason)}
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) time.Time {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
