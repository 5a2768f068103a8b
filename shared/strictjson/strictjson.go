// Package strictjson decodes JSON that must be read exactly: requests,
// vault secrets. It is json/v2 (github.com/go-json-experiment/json) with its
// strict defaults plus the two limits it lacks, a size and a depth.
package strictjson

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Limits bounds a document: at most MaxBytes bytes and MaxDepth levels of
// nesting. Zero means no limit of that kind.
type Limits struct {
	MaxBytes int
	MaxDepth int
}

// Kind names the rule a document broke.
type Kind int

// The rules a document can break.
const (
	Size      Kind = iota + 1 // over Limits.MaxBytes
	NotObject                 // the value is not a JSON object
	Depth                     // nested deeper than Limits.MaxDepth
	UTF8                      // invalid UTF-8
	Surrogate                 // a lone surrogate escape
	Duplicate                 // a name given twice in one object
	Syntax                    // malformed JSON
	Truncated                 // the document ends inside the value
	Trailing                  // data after the value
	Unknown                   // a name no field of the target carries, case for case
	Type                      // a value of the wrong JSON kind for its field
)

// Error is a refused document. It never quotes a value of the document;
// Name is a member name, and callers that must not repeat names check it.
type Error struct {
	Kind   Kind
	Field  string // the top-level member the fault is in; "" when none
	Path   string // dotted member names to the fault, array indices left out
	Ptr    string // the JSON pointer (RFC 6901) to the fault's value or member
	Name   string // Duplicate, Unknown: the member name at fault
	Offset int64  // byte offset of the fault, where known
	Size   int    // Size: the document's length
	Limit  int    // Size, Depth: the limit broken
	Want   string // Type: the Go type wanted
	Got    string // Type: the JSON kind found ("string", "number", ...)
	Detail string // Syntax: what is wrong, as encoding/json words it
}

// Error states the rule, prefixed with the top-level field it is in.
func (e *Error) Error() string {
	var msg string
	switch e.Kind {
	case Size:
		msg = fmt.Sprintf("%d bytes, at most %d", e.Size, e.Limit)
	case NotObject:
		msg = "not a JSON object"
	case Depth:
		msg = fmt.Sprintf("nested deeper than %d levels", e.Limit)
	case UTF8:
		msg = fmt.Sprintf("invalid UTF-8 at byte %d", e.Offset)
	case Surrogate:
		msg = fmt.Sprintf("lone surrogate escape at byte %d", e.Offset)
	case Duplicate:
		return fmt.Sprintf("duplicate field %q", e.Name)
	case Syntax:
		return fmt.Sprintf("malformed JSON at byte %d: %s", e.Offset, e.Detail)
	case Truncated:
		return "truncated JSON"
	case Trailing:
		return "unexpected data after the JSON value"
	case Unknown:
		return fmt.Sprintf("unknown field %q", e.Name)
	case Type:
		if e.Path != "" {
			return fmt.Sprintf("field %q: want %s, got JSON %s", e.Path, e.Want, e.Got)
		}
		return fmt.Sprintf("want %s, got JSON %s", e.Want, e.Got)
	}
	if e.Field != "" {
		return fmt.Sprintf("field %q: %s", e.Field, msg)
	}
	return msg
}

// Decode decodes the JSON object data into v, a pointer to a struct, by
// json/v2's rules: names match case for case, a duplicate name, an unknown
// name (RejectUnknownMembers), invalid UTF-8 or a lone surrogate escape,
// and data after the value are refused, as are documents over lim. Every
// failure is an *Error.
func Decode(data []byte, v any, lim Limits) error {
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return &Error{Kind: Size, Size: len(data), Limit: lim.MaxBytes}
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	object := len(t) > 0 && t[0] == '{'
	if err := check(data, lim.MaxDepth); err != nil {
		if e := err.(*Error); !object && (e.Kind == Syntax || e.Kind == Truncated || e.Kind == Trailing) {
			return &Error{Kind: NotObject}
		}
		return err
	}
	if !object {
		return &Error{Kind: NotObject}
	}
	if err := json.Unmarshal(data, v, json.RejectUnknownMembers(true)); err != nil {
		return classify(data, err)
	}
	return nil
}

// check reads data's tokens once: json/v2's syntax rules, and the depth.
func check(data []byte, maxDepth int) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.ReadToken(); err != nil {
			if err == io.EOF {
				return nil
			}
			return classify(data, err)
		}
		if maxDepth > 0 && dec.StackDepth() > maxDepth {
			_, field := path(string(dec.StackPointer()))
			return &Error{Kind: Depth, Field: field, Ptr: string(dec.StackPointer()), Limit: maxDepth, Offset: dec.InputOffset() - 1}
		}
		if dec.StackDepth() == 0 { // the value is complete: only whitespace may follow
			end := dec.InputOffset()
			if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
				return &Error{Kind: Trailing, Offset: int64(len(data) - len(rest))}
			}
			return nil
		}
	}
}

// classify turns a json/v2 error into an *Error.
func classify(data []byte, err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		p, field := path(string(syn.JSONPointer))
		e := &Error{Field: field, Path: p, Ptr: string(syn.JSONPointer), Offset: syn.ByteOffset}
		msg := syn.Err.Error()
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			e.Kind, e.Name = Duplicate, last(string(syn.JSONPointer))
		case strings.Contains(msg, "invalid UTF-8"):
			e.Kind = UTF8
		case strings.Contains(msg, "surrogate"):
			e.Kind = Surrogate
		case errors.Is(syn.Err, io.ErrUnexpectedEOF), syn.Err == io.EOF:
			e.Kind = Truncated
		case strings.Contains(msg, "after top-level value"):
			e.Kind = Trailing
		default:
			e.Kind = Syntax
			e.Offset, e.Detail = stdSyntax(data, syn)
		}
		return e
	case errors.As(err, &sem):
		p, field := path(string(sem.JSONPointer))
		if errors.Is(sem.Err, json.ErrUnknownName) {
			return &Error{Kind: Unknown, Field: field, Path: p, Ptr: string(sem.JSONPointer), Name: last(string(sem.JSONPointer)), Offset: sem.ByteOffset}
		}
		e := &Error{Kind: Type, Field: field, Path: p, Ptr: string(sem.JSONPointer), Offset: sem.ByteOffset, Got: kindName(sem.JSONKind)}
		if e.Got == "number" && numeric(sem.GoType) && sem.ByteOffset < int64(len(data)) {
			// encoding/json's wording: a number a numeric field cannot hold is shown.
			n := data[sem.ByteOffset:]
			e.Got += " " + string(n[:len(n)-len(bytes.TrimLeft(n, "+-.eE0123456789"))])
		}
		if sem.GoType != nil {
			e.Want = sem.GoType.String()
		}
		return e
	}
	return &Error{Kind: Syntax, Detail: err.Error()}
}

// stdSyntax words a syntax error the way encoding/json does, the wording
// docs/contract.md's examples use; json/v2's offset and text when it finds
// none.
func stdSyntax(data []byte, syn *jsontext.SyntacticError) (int64, string) {
	var se *stdjson.SyntaxError
	if err := stdjson.Unmarshal(data, new(any)); errors.As(err, &se) {
		return se.Offset, se.Error()
	}
	return syn.ByteOffset, syn.Err.Error()
}

// path turns a JSON pointer into dotted member names without array
// indices, and its first member.
func path(ptr string) (dotted, first string) {
	var names []string
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" || strings.Trim(tok, "0123456789") == "" {
			continue
		}
		names = append(names, unescape(tok))
	}
	if len(names) == 0 {
		return "", ""
	}
	first, _, _ = strings.Cut(strings.TrimPrefix(ptr, "/"), "/")
	return strings.Join(names, "."), unescape(first)
}

func last(ptr string) string {
	return unescape(ptr[strings.LastIndexByte(ptr, '/')+1:])
}

func unescape(tok string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

func numeric(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
