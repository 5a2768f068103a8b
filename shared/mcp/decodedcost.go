package mcp

// Weights of decodedCost: what the SDK's decoder (segmentio/encoding/json
// behind go-sdk's internal/json) retains at most per object, per array and
// per element or member decoded into `any`, over the value's bytes.
// TestDecodedCostCoversTheSDKsDecoder measures the shapes that fixed them:
// `[[],...]` retains 71x its bytes (estimated 86x), `[{"a":1},...]` 45x
// (49x), `[1,...]` 14x (33x), `["a",...]` 9x (17x), the near-limit listing
// 3.1x (3.6x).
const (
	objectCost = 256
	arrayCost  = 192
	valueCost  = 64
)

// decodedCost estimates from its bytes what decoding the JSON in b into
// `any` costs: len(b), a weight per object and array, and one per element
// or member (the commas, plus one for each container that is not empty).
// It reads anything without failing; a string left open counts as such.
func decodedCost(b []byte) int64 {
	var objects, arrays, values int64
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			end := skipString(b, i)
			if end < 0 {
				i = len(b)
				break
			}
			i = end - 1
		case '{', '[':
			if c == '{' {
				objects++
			} else {
				arrays++
			}
			if k := skipSpace(b, i+1); k < len(b) && b[k] != '}' && b[k] != ']' {
				values++
			}
		case ',':
			values++
		}
	}
	return int64(len(b)) + objects*objectCost + arrays*arrayCost + values*valueCost
}

// skipSpace returns the index of the first byte at or after b[i] that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
