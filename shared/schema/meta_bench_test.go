package schema

import (
	"encoding/json"
	"testing"
)

// BenchmarkMetaDistinct times the meta-schema validation alone over the
// 1,000 distinct schemas, already decoded: by jsonschema-go, and by
// fastAccepts, which Check runs first (DESIGN.md, "Cost").
func BenchmarkMetaDistinct(b *testing.B) {
	docs := make([]any, 1000)
	for i := range docs {
		if err := json.Unmarshal(distinct(i), &docs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("jsonschema-go", func(b *testing.B) {
		for b.Loop() {
			for _, d := range docs {
				if err := metaSchema.Validate(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("fastAccepts", func(b *testing.B) {
		for b.Loop() {
			for _, d := range docs {
				if !fastAccepts(d) {
					b.Fatal("refused")
				}
			}
		}
	})
}
