package schema

import (
	"testing"
)

// TestRefusalDetailIsStable: a schema breaking several rules is refused
// for the same one every time: the first keyword by name, looking into a
// subschema first, and an object's entries by key.
func TestRefusalDetailIsStable(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"three rules in one schema", `{"type":"object","properties":{"a":{"minimum":"x","maximum":"y","minLength":-1}}}`,
			`schema refused: compile: not a draft 2020-12 schema: type: y has type "string", want "number"`},
		{"rules in two subschemas and two vocabularies", `{"type":"object","properties":{"b":{"minimum":"x"},"a":{"type":"strng","maxLength":-1,"items":1}}}`,
			`schema refused: compile: not a draft 2020-12 schema: type: 1 has type "integer", want one of "object, boolean"`},
		{"a subschema before its keyword's shape", `{"type":"object","$defs":{"z":{"type":1},"a":"not a schema"}}`,
			`schema refused: compile: not a draft 2020-12 schema: anyOf: did not validate against any of [<anonymous schema> <anonymous schema>]: enum: 1 does not equal any of: [array boolean integer null number object string] type: 1 has type "integer", want "array"`},
		{"entries by key", `{"type":"object","dependentRequired":{"b":1,"a":["x","x"],"c":"y"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]int{}
			for range 100 {
				seen[Check([]byte(tt.schema)).Error()]++
			}
			if len(seen) != 1 {
				t.Fatalf("refused for %d different reasons: %v", len(seen), seen)
			}
			for got := range seen {
				if tt.want != "" && got != tt.want {
					t.Errorf("Check = %s\nwant    %s", got, tt.want)
				}
			}
		})
	}
}
