package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
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
