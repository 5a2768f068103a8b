package render

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func checkEscapedLen(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got := 2
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		got += escapedLen(r, size)
		i += size
	}
	if got != len(want) {
		t.Fatalf("escaped length of %q: computed %d, encoding/json %d (%s)", s, got, len(want), want)
	}
	if cut := cutText(s, len(want)); cut != s {
		t.Fatalf("cutText(%q, its own encoded length) = %q", s, cut)
	}
	if len(s) > 0 {
		cut := cutText(s, len(want)-1)
		if len(cut) >= len(s) {
			t.Fatalf("cutText(%q, one byte short) = %q, want a shorter prefix", s, cut)
		}
		if enc, _ := json.Marshal(cut); len(enc) > len(want)-1 {
			t.Fatalf("cutText(%q, %d) = %q encodes to %d bytes", s, len(want)-1, cut, len(enc))
		}
	}
}

// TestEscapedLen pins escapedLen to encoding/json for every byte value and
// the runes it treats specially.
func TestEscapedLen(t *testing.T) {
	for b := range 256 {
		checkEscapedLen(t, string([]byte{byte(b)}))
	}
	for _, s := range []string{"", "é", "日本", "🙂", "\u2028", "\u2029", "\u007f", "\ufffd", "\xed\xa0\x80", "a\xffb"} {
		checkEscapedLen(t, s)
	}
}

func FuzzEscapedLen(f *testing.F) {
	f.Add("plain")
	f.Add("<&>\"\\\b\f\n\r\t\x00\x1f\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) { checkEscapedLen(t, s) })
}
