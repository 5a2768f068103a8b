package render

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// truncate fits tr into limit bytes of marshaled JSON. Blocks are kept in
// order while they fit; a text block that does not fit is cut and ends the
// result; an image or document that does not fit becomes a note. A final
// marker block says how much is shown. It returns the result and the number
// of notes it added. When even the bare marker exceeds limit, the result is
// the marker alone.
func truncate(tr ToolResult, limit int) (ToolResult, int) {
	sizes := make([]int, len(tr.Content))
	total := 0
	for i, b := range tr.Content {
		sizes[i] = len(marshal(b))
		total += sizes[i]
	}
	out := tr
	// The widest marker: shown bytes never exceed total, omitted blocks never
	// exceed the count of blocks.
	out.Content = []Block{marker(total, total, len(sizes))}
	avail := limit - len(marshal(out))

	kept := make([]Block, 0, len(tr.Content)+1)
	shown, omitted, notes := 0, 0, 0
	for i, b := range tr.Content {
		cost := sizes[i] + 1 // the comma before the next block
		if cost <= avail {
			kept = append(kept, b)
			avail -= cost
			shown += sizes[i]
			continue
		}
		omitted++
		if b.Type != TypeText {
			n := base64Len(b)
			note := textBlock(fmt.Sprintf("[%s omitted: %s, %d bytes; the result exceeded the size limit]", b.Type, b.Source.MediaType, n))
			if c := len(marshal(note)) + 1; c <= avail {
				kept = append(kept, note)
				avail -= c
				notes++
			}
			continue
		}
		overhead := len(marshal(textBlock("x"))) - len(`"x"`)
		if head := cutText(b.Text, avail-1-overhead); strings.TrimSpace(head) != "" {
			cut := textBlock(head)
			kept = append(kept, cut)
			shown += len(marshal(cut))
		}
		omitted += len(tr.Content) - i - 1
		break
	}
	out.Content = append(kept, marker(shown, total, omitted))
	if len(marshal(out)) > limit {
		out.Content = []Block{marker(0, total, len(tr.Content))}
	}
	return out, notes
}

// marker is the text block that ends a truncated result.
func marker(shown, total, omitted int) Block {
	return textBlock(fmt.Sprintf("[truncated: %d of %d bytes shown; %d blocks cut or omitted to fit the size limit]", shown, total, omitted))
}

// base64Len is the decoded size of an image or document block's data.
func base64Len(b Block) int {
	if b.Source == nil {
		return 0
	}
	n := len(b.Source.Data) / 4 * 3
	if l := len(b.Source.Data); l >= 2 && b.Source.Data[l-1] == '=' {
		n--
		if b.Source.Data[l-2] == '=' {
			n--
		}
	}
	return n
}

// cutText returns the longest prefix of s, cut at a rune boundary, whose JSON
// string encoding is at most room bytes (quotes included).
func cutText(s string, room int) string {
	n := 2 // the quotes
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += escapedLen(r, size)
		if n > room {
			return s[:i]
		}
		i += size
	}
	return s
}

// escapedLen is the length encoding/json (HTML-escaping, as json.Marshal)
// gives one decoded rune; TestEscapedLen and FuzzEscapedLen pin it.
func escapedLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return len(`\ufffd`)
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return len(`\u0000`)
	default:
		return size
	}
}
