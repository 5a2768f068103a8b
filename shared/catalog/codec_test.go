package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Round-trip fuzz targets, one per binary format of codec.go: whatever a
// decoder accepts encodes to bytes it decodes to the same value, and
// encoding that value again gives the same bytes. `go test` runs the seed
// corpus; `go test -fuzz FuzzManifest ./shared/catalog` explores.

var cmpOpts = cmp.AllowUnexported(manifest{}, mentry{})

func fuzzTool() mcp.Tool {
	yes, no := true, false
	return mcp.Tool{
		Name: "a.b", Title: "T", Description: "d", InputSchema: []byte(`{"type":"object"}`),
		OutputSchema: []byte(`{}`), Meta: []byte(`{"k":1}`),
		Annotations: &mcp.Annotations{ReadOnlyHint: &yes, IdempotentHint: &no, Other: []byte(`{"x":2}`)},
	}
}

func FuzzManifest(f *testing.F) {
	m := manifest{writers: []string{"v1", "v0"}, refused: []mcp.Refusal{{Name: "bad", Reason: "why"}}}
	for i, name := range []string{"a", "b"} {
		e := mentry{fields: fieldHash(mcp.Tool{Name: name}), model: byte(12 * i), hints: 0x5, writer: i}
		sum := sha256.Sum256([]byte(name))
		copy(e.name[:], sum[:])
		m.tools = append(m.tools, e)
	}
	f.Add(m.encode())
	f.Add((&manifest{writers: []string{"v"}}).encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		enc := m.encode()
		again, err := decodeManifest(enc)
		if err != nil {
			t.Fatalf("decodeManifest(encode(%x)): %v", b, err)
		}
		if diff := cmp.Diff(m, again, cmpOpts); diff != "" {
			t.Fatalf("manifest round trip (-first +second):\n%s", diff)
		}
		if !bytes.Equal(enc, again.encode()) {
			t.Fatalf("encode is not stable for %x", b)
		}
	})
}

func FuzzChanges(f *testing.F) {
	f.Add(encodeChanges(&Changes{Added: []string{"a"}, Removed: []string{"b", "c"}, Changed: []string{}, AddedCount: 1, RemovedCount: 5}))
	f.Add(encodeChanges(&Changes{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChanges(b)
		if err != nil {
			return
		}
		enc := encodeChanges(c)
		again, err := decodeChanges(enc)
		if err != nil {
			t.Fatalf("decodeChanges(encodeChanges(%x)): %v", b, err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("changes round trip (-first +second):\n%s", diff)
		}
		if !bytes.Equal(enc, encodeChanges(again)) {
			t.Fatalf("encodeChanges is not stable for %x", b)
		}
	})
}

func FuzzTool(f *testing.F) {
	f.Add(encodeTool(fuzzTool()))
	f.Add(encodeTool(mcp.Tool{Name: "plain", InputSchema: []byte(`{}`)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tool, err := decodeTool(b)
		if err != nil {
			return
		}
		enc := encodeTool(tool)
		again, err := decodeTool(enc)
		if err != nil {
			t.Fatalf("decodeTool(encodeTool(%x)): %v", b, err)
		}
		if diff := cmp.Diff(tool, again); diff != "" {
			t.Fatalf("tool round trip (-first +second):\n%s", diff)
		}
		if !bytes.Equal(enc, encodeTool(again)) {
			t.Fatalf("encodeTool is not stable for %x", b)
		}
	})
}

func FuzzGzipTool(f *testing.F) {
	f.Add(gzipTool(fuzzTool()))
	f.Add(gzipTool(mcp.Tool{Name: "plain", InputSchema: []byte(`{}`)}))
	f.Fuzz(func(t *testing.T, z []byte) {
		tool, err := gunzipTool(z)
		if err != nil {
			return
		}
		again, err := gunzipTool(gzipTool(tool))
		if err != nil {
			t.Fatalf("gunzipTool(gzipTool(...)) of %x: %v", z, err)
		}
		if diff := cmp.Diff(tool, again); diff != "" {
			t.Fatalf("gzip round trip (-first +second):\n%s", diff)
		}
	})
}

func FuzzAnnotations(f *testing.F) {
	f.Add(encodeAnnotations(fuzzTool().Annotations))
	f.Add(encodeAnnotations(&mcp.Annotations{}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAnnotations(b)
		if err != nil {
			return
		}
		enc := encodeAnnotations(a)
		again, err := decodeAnnotations(enc)
		if err != nil {
			t.Fatalf("decodeAnnotations(encodeAnnotations(%x)): %v", b, err)
		}
		if diff := cmp.Diff(a, again); diff != "" {
			t.Fatalf("annotations round trip (-first +second):\n%s", diff)
		}
		if !bytes.Equal(enc, encodeAnnotations(again)) {
			t.Fatalf("encodeAnnotations is not stable for %x", b)
		}
	})
}

// FuzzModelExceptions encodes the exceptions of two tools, one named fuzz
// input and mapped with its digit count, and decodes them.
func FuzzModelExceptions(f *testing.F) {
	f.Add("a.b", uint8(12))
	f.Add("x", uint8(63))
	f.Fuzz(func(t *testing.T, name string, d uint8) {
		digits := 12 + int(d)%52
		if name == "" || len(name) > 128 {
			return
		}
		mapped := entryOf(mcp.Tool{Name: name, ModelName: mappedName(name, digits)})
		plain := entryOf(mcp.Tool{Name: name + "_", ModelName: defaultModelName(name + "_")})
		b, ok := modelExceptions([]entry{plain, mapped}, 2)
		if !ok {
			t.Fatal("two entries did not fit a limit of 2")
		}
		got, err := decodeModelExceptions(b)
		if err != nil {
			t.Fatal(err)
		}
		want := map[uint64]int{}
		if mapped.tool.ModelName != defaultModelName(name) {
			want[nameKey(name)] = digits
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("exceptions of %q (-want +got):\n%s", name, diff)
		}
	})
}

// FuzzNameIndex indexes fuzzed names and finds each, in index order.
func FuzzNameIndex(f *testing.F) {
	f.Add("a", "b", "c")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		names := []string{a, b, c}
		var entries []entry
		for _, n := range names {
			entries = append(entries, entryOf(mcp.Tool{Name: n}))
		}
		ix := nameIndex(entries)
		if len(ix) != 8*len(names) {
			t.Fatalf("index of %d names is %d bytes", len(names), len(ix))
		}
		for _, n := range names {
			if !indexContains(ix, n) {
				t.Fatalf("index lacks %q", n)
			}
		}
	})
}

func entryOf(t mcp.Tool) entry {
	return entry{tool: t, hash: sha256.Sum256([]byte(t.Name))}
}

// encodeChanges frames c as versions stored before the changes map did
// (decodeChanges): the three counts as uvarints, then per list the
// number of names kept and each name, length-prefixed.
func encodeChanges(c *Changes) []byte {
	var b []byte
	for _, n := range []int{c.AddedCount, c.RemovedCount, c.ChangedCount} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	for _, l := range [][]string{c.Added, c.Removed, c.Changed} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, name := range l {
			b = binary.AppendUvarint(b, uint64(len(name)))
			b = append(b, name...)
		}
	}
	return b
}

// TestStoredChangesByType: the changes attribute decodes by its type, a
// map as Put writes it and the binary framing of earlier versions alike;
// anything else is errBadChanges.
func TestStoredChangesByType(t *testing.T) {
	want := &Changes{Added: []string{"a"}, Removed: []string{}, Changed: []string{"b", "c"}, AddedCount: 3, ChangedCount: 2}
	native, err := attributevalue.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := native.(*types.AttributeValueMemberM); !ok {
		t.Fatalf("Changes marshals as %T, want a map", native)
	}
	for name, v := range map[string]types.AttributeValue{
		"map":    native,
		"binary": &types.AttributeValueMemberB{Value: encodeChanges(want)},
	} {
		got, err := decodeStoredChanges(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	without := func(k string) types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for key, v := range native.(*types.AttributeValueMemberM).Value {
			if key != k {
				m[key] = v
			}
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	with := func(k string, v types.AttributeValue) types.AttributeValue {
		m := without(k).(*types.AttributeValueMemberM)
		m.Value[k] = v
		return m
	}
	for name, v := range map[string]types.AttributeValue{
		"string":           &types.AttributeValueMemberS{Value: "a"},
		"list":             &types.AttributeValueMemberL{},
		"no removed list":  without("removed"),
		"unknown key":      with("renamed", &types.AttributeValueMemberL{}),
		"count as string":  with("added_count", &types.AttributeValueMemberS{Value: "3"}),
		"count below list": with("changed_count", &types.AttributeValueMemberN{Value: "1"}),
		"list of numbers":  with("added", &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "1"}}}),
		"truncated binary": &types.AttributeValueMemberB{Value: encodeChanges(want)[:5]},
		"trailing binary":  &types.AttributeValueMemberB{Value: append(encodeChanges(want), 0)},
	} {
		if _, err := decodeStoredChanges(v); !errors.Is(err, errBadChanges) {
			t.Errorf("%s: %v, want errBadChanges", name, err)
		}
	}
}
