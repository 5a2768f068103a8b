package catalog

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// benchChanges is a diff of n changes: a third each added, removed and
// changed, with names of 20 to 40 bytes.
func benchChanges(n int) *Changes {
	var added, removed, changed []string
	for i := range n {
		name := fmt.Sprintf("tool_%0*d", 15+i%21, i)
		switch i % 3 {
		case 0:
			added = append(added, name)
		case 1:
			removed = append(removed, name)
		default:
			changed = append(changed, name)
		}
	}
	return boundChanges(added, removed, changed)
}

// attrSize is v's size as DynamoDB counts it toward an item's 400 KB:
// strings and binaries by their bytes, numbers by about one byte per two
// digits plus one, lists and maps 3 bytes plus 1 per element plus their
// elements (and a map's keys).
func attrSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + attrSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + attrSize(e)
		}
		return n
	case *types.AttributeValueMemberNULL, *types.AttributeValueMemberBOOL:
		return 1
	}
	panic(fmt.Sprintf("attrSize: %T", v))
}

// BenchmarkChanges compares the changes attribute framed as binary
// (encodeChanges) with a native map of lists (attributevalue and the
// dynamodbav tags): encode plus decode per op, and the attribute's size
// toward the item limit (attr-bytes).
func BenchmarkChanges(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		c := benchChanges(n)
		b.Run(fmt.Sprintf("custom/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				v := encodeChanges(c)
				size = len(v)
				if _, err := decodeChanges(v); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "attr-bytes")
		})
		b.Run(fmt.Sprintf("native/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				v, err := attributevalue.Marshal(c)
				if err != nil {
					b.Fatal(err)
				}
				size = attrSize(v)
				var got Changes
				if err := attributevalue.Unmarshal(v, &got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "attr-bytes")
		})
	}
}
