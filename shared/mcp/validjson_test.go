package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

func FuzzValidJSON(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5e`, `1e+`, `1E-7`, `-12.5e+10`, `1e5x`, `+1`,
		`tru`, `true `, ` false`, `nul`, `nulll`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{,}`, `[,]`, `{"a":1,}`,
		`"\u00e9"`, `"\u00g9"`, `"\x"`, `"\/"`, "\"a\tb\"", "\"\x7f\xff\"", `"unterminated`, `"\`, "\"\\u12\"",
		"\t\r\n 1 \n", `{"a":[{"b":{}}],"c":[]}`, `[[]]]`, `{}}`, "1\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

func TestValidJSONNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
	}{
		{"at the limit", maxJSONDepth},
		{"past the limit", maxJSONDepth + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pair := range []string{"[]", `{"a":}`} {
				open, closing := pair[:len(pair)-1], pair[len(pair)-1:]
				b := []byte(strings.Repeat(open, tc.depth) + "1" + strings.Repeat(closing, tc.depth))
				if pair == "[]" {
					b = []byte(strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth))
				}
				want := tc.depth <= maxJSONDepth
				if got, std := validJSON(b), json.Valid(b); got != want || std != want {
					t.Errorf("%s nested %d deep: validJSON = %v, json.Valid = %v; want %v", pair, tc.depth, got, std, want)
				}
				if _, got := readMessage(b); pair == `{"a":}` && got != want {
					t.Errorf("%s nested %d deep: readMessage ok = %v, want %v", pair, tc.depth, got, want)
				}
			}
		})
	}
}

// validJSON (tests only) pins how the scanner's parts compose: it what encoding/json's json.Valid reports: b is one JSON
// value surrounded by whitespace at most, nested at most maxJSONDepth deep.
func validJSON(b []byte) bool {
	return shallow(b) && segjson.Valid(b)
}
