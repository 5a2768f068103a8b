package wire

import "errors"

// typed is an error that names its own wire type (shared/oauth's *Error).
type typed interface{ WireType() ErrorType }

// DeclaredType is the wire type the first error in err's chain that names
// its own declares (a failed OAuth exchange, shared/oauth), or "".
func DeclaredType(err error) ErrorType {
	var t typed
	if errors.As(err, &t) {
		return t.WireType()
	}
	return ""
}

// ClassifyConnect is the wire type of a failed connection or call that may
// carry a failed OAuth refresh: the type that refresh declares
// (DeclaredType), else ClassifyMCP's.
func ClassifyConnect(err error) ErrorType {
	if t := DeclaredType(err); t != "" {
		return t
	}
	return ClassifyMCP(err)
}
