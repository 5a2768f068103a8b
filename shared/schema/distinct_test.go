package schema

import (
	"fmt"
	"testing"
)

// distinct returns the i-th of a family of realistic, distinct tool input
// schemas of about 1.8 KB: nested objects, arrays, enums, a pattern, an
// anyOf with null and, for every other one, $defs reached by $ref.
func distinct(i int) []byte {
	t := topics[i%len(topics)]
	defs, ref := "", `{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}`
	if i%2 == 0 {
		defs = fmt.Sprintf(`"$defs":{"Addr%d":{"type":"object","properties":{"street":{"type":"string","maxLength":200},`+
			`"city":{"type":"string"},"postcode":{"type":"string","pattern":"^[0-9A-Z -]{3,%d}$"}},"required":["street"]}},`, i, 10+i%7)
		ref = fmt.Sprintf(`{"$ref":"#/$defs/Addr%d"}`, i)
	}
	return fmt.Appendf(nil, `{%s"type":"object","title":"%s_tool_%d","properties":{`+
		`"%s_id_%d":{"type":"string","description":"The identifier of the %s to act on, as shown in the web console and in every notification; tool %d of the generated catalog."},`+
		`"mode_%d":{"type":"string","enum":["fast","careful","dry-run","audit-%d"],"default":"careful"},`+
		`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"At most this many results are returned. Results are ordered by their last change, newest first; ask again with the cursor from the previous answer to read on."},`+
		`"filters":{"type":"array","maxItems":20,"items":{"type":"object","properties":{`+
		`"field":{"type":"string","minLength":1},"op":{"type":"string","enum":["eq","ne","lt","gt","in"]},`+
		`"value":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"null"}]}},"required":["field","op"],"additionalProperties":false}},`+
		`"address":%s,`+
		`"options":{"type":"object","properties":{"verbose":{"type":"boolean","default":false},`+
		`"timeout_ms":{"type":"integer","minimum":0,"maximum":600000},"tags":{"type":"array","items":{"type":"string","maxLength":%d},"uniqueItems":true},`+
		`"locale":{"type":"string","pattern":"^[a-z]{2}(-[A-Z]{2})?$","description":"A BCP 47 language tag, such as en-GB, for the %s text."}}},`+
		`"note":{"anyOf":[{"type":"string","maxLength":500},{"type":"null"}],"default":null,"description":"A free-text note kept with the %s record for the audit trail of tool %d."}},`+
		`"required":["%s_id_%d","mode_%d"],"additionalProperties":false}`,
		defs, t, i, t, i, t, i, i, i, 100+i, ref, 32+i%50, t, t, i, t, i, i)
}

func TestDistinctSchemasAreAcceptedAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	total := 0
	for i := range 1000 {
		s := distinct(i)
		if err := Check(s); err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		if seen[string(s)] {
			t.Fatalf("schema %d repeats another", i)
		}
		seen[string(s)] = true
		total += len(s)
	}
	if avg := total / 1000; avg < 1500 || avg > 2200 {
		t.Errorf("average schema is %d bytes, want about 1.8 KB", avg)
	}
}

// BenchmarkCheckDistinct checks 1,000 distinct ~1.8 KB schemas per
// iteration, as a discover of a 1,000-tool listing does on a new catalog.
func BenchmarkCheckDistinct(b *testing.B) {
	schemas := make([][]byte, 1000)
	for i := range schemas {
		schemas[i] = distinct(i)
	}
	for b.Loop() {
		for _, s := range schemas {
			if err := Check(s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(schemas)), "ns/tool")
}
