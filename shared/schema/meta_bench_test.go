package schema

import (
	"encoding/json"
	"testing"
)

// BenchmarkMetaDistinct times the meta-schema validation alone over the
// 1,000 distinct schemas, already decoded: the share of Check a faster
// meta-schema validator could cut (DESIGN.md, "Cost").
func BenchmarkMetaDistinct(b *testing.B) {
	docs := make([]any, 1000)
	for i := range docs {
		if err := json.Unmarshal(distinct(i), &docs[i]); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		for _, d := range docs {
			if err := metaSchema.Validate(d); err != nil {
				b.Fatal(err)
			}
		}
	}
}
