package schema

import (
	"fmt"
	"strings"
	"testing"
)

var topics = []string{"invoice", "customer", "shipment", "ticket", "report", "calendar", "inventory", "payment"}

// catalog returns 50 tool input schemas: 40 shaped like mcptest's filler
// tools (about 300 bytes, no $ref) and 10 shaped like pydantic's output
// for nested models (about 1 KiB, $defs, $ref, anyOf with null, enum,
// pattern).
func catalog() [][]byte {
	var out [][]byte
	for i := range 50 {
		t := topics[i%len(topics)]
		if i%5 != 4 {
			out = append(out, fmt.Appendf(nil, `{"type":"object","properties":{`+
				`"id":{"type":"string","description":"The %s id, e.g. %s-1234."},`+
				`"fields":{"type":"array","items":{"type":"string"},"description":"Fields to return; all when empty."},`+
				`"include_archived":{"type":"boolean","default":false}},"required":["id"]}`, t, t))
			continue
		}
		out = append(out, fmt.Appendf(nil, `{"$defs":{"Address":{"properties":{"street":{"title":"Street","type":"string"},`+
			`"city":{"title":"City","type":"string"},"postcode":{"pattern":"^[0-9A-Z -]{3,10}$","title":"Postcode","type":"string"},`+
			`"country":{"default":"GB","maxLength":2,"minLength":2,"title":"Country","type":"string"}},"required":["street","city","postcode"],`+
			`"title":"Address","type":"object"},"Line":{"properties":{"sku":{"title":"Sku","type":"string"},"quantity":{"minimum":1,"title":"Quantity","type":"integer"},`+
			`"unit_price":{"anyOf":[{"type":"number"},{"type":"null"}],"default":null,"title":"Unit Price"}},"required":["sku","quantity"],"title":"Line","type":"object"},`+
			`"Status":{"enum":["draft","open","paid","void"],"title":"Status","type":"string"}},`+
			`"properties":{"%s_id":{"description":"The %s to update.","title":"Id","type":"string"},"status":{"$ref":"#/$defs/Status"},`+
			`"ship_to":{"anyOf":[{"$ref":"#/$defs/Address"},{"type":"null"}],"default":null},`+
			`"lines":{"items":{"$ref":"#/$defs/Line"},"maxItems":100,"title":"Lines","type":"array"},`+
			`"note":{"anyOf":[{"maxLength":500,"type":"string"},{"type":"null"}],"default":null,"title":"Note"}},`+
			`"required":["%s_id","lines"],"title":"update_%sArguments","type":"object"}`, t, t, t, t))
	}
	return out
}

func TestCatalogIsAccepted(t *testing.T) {
	for i, s := range catalog() {
		if err := Check(s); err != nil {
			t.Errorf("tool %d: %v", i, err)
		}
	}
}

// BenchmarkCheck checks a 50-tool catalog per iteration, as discovery
// does once per listed tool; ns/tool is the cost per tool.
func BenchmarkCheck(b *testing.B) {
	tools := catalog()
	for b.Loop() {
		for _, s := range tools {
			if err := Check(s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tools)), "ns/tool")
}

// BenchmarkCheckWorst checks the costliest schema the limits let through:
// MaxDepth deep with a large description at the bottom, just under MaxBytes.
// With a $ref, jsonschema-go's Resolve reads it too.
func BenchmarkCheckWorst(b *testing.B) {
	b.Run("no-ref", func(b *testing.B) { benchmarkWorst(b, `{"type":"object","description":"`) })
	b.Run("ref", func(b *testing.B) { benchmarkWorst(b, `{"type":"object","$ref":"#/properties/a","description":"`) })
}

func benchmarkWorst(b *testing.B, head string) {
	s := head + strings.Repeat("x", MaxBytes-4096) + `"}`
	for range (MaxDepth - 1) / 2 {
		s = `{"type":"object","properties":{"a":` + s + `}}`
	}
	if err := Check([]byte(s)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := Check([]byte(s)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckShapes times the two shapes in catalog apart: a filler
// schema (no $ref) and a pydantic-style one (with $ref).
func BenchmarkCheckShapes(b *testing.B) {
	tools := catalog()
	for name, s := range map[string][]byte{"filler": tools[0], "pydantic": tools[4]} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := Check(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
