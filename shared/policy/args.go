package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// ArgumentsSHA256 is the hex SHA-256 of args canonicalised by RFC 8785
// (JCS): key order, whitespace and number spelling do not change it, so an
// approval still matches after the arguments went through a JSON
// re-encoder (Step Functions, a queue). Empty arguments hash as {}.
func ArgumentsSHA256(args []byte) (string, error) {
	v := jsontext.Value(bytes.Clone(args))
	if len(bytes.TrimSpace(v)) == 0 {
		v = jsontext.Value("{}")
	}
	if err := v.Canonicalize(); err != nil {
		return "", fmt.Errorf("policy: arguments are not canonical JSON: %w", err)
	}
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:]), nil
}
