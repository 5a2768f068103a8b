package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/text"
)

// DefaultMaxBytes is the limit on a rendered result's marshaled JSON when
// Options.MaxBytes is zero: Step Functions' 256 KiB state payload less a
// margin for the envelope that carries the result.
const DefaultMaxBytes = 200_000

// Block and source types of the Anthropic Messages API.
const (
	TypeToolResult = "tool_result"
	TypeText       = "text"
	TypeImage      = "image"
	TypeDocument   = "document"
	SourceBase64   = "base64"
)

// ErrStore is wrapped by Render's error when an oversized result could not be
// stored in S3; the result returned with it is the truncated form.
var ErrStore = errors.New("render: storing the oversized result failed")

// ToolResult is an Anthropic tool_result content block. Type is always
// "tool_result"; Content is never nil.
type ToolResult struct {
	Type      string  `json:"type"`
	ToolUseID string  `json:"tool_use_id"`
	IsError   bool    `json:"is_error"`
	Content   []Block `json:"content"`
}

// Block is one content block inside a tool_result: "text" with Text, or
// "image" / "document" with a base64 Source.
type Block struct {
	Type   string  `json:"type"`
	Text   string  `json:"text,omitempty"`
	Source *Source `json:"source,omitempty"`
}

// Source is a base64 source of an image or document block.
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// ObjectPutter is the part of *s3.Client that Render uses to store an
// oversized result.
type ObjectPutter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

var _ ObjectPutter = (*s3.Client)(nil)

// Options bound a rendered result. The zero value truncates at
// DefaultMaxBytes and leaves text as the server sent it. When Bucket and
// Objects are both set, an oversized result is stored as
// s3://Bucket/KeyPrefix<tool use id>/<sha256>.json instead. Scrub, when
// set, rewrites the text of every block converted from the server's answer
// (the caller's secret redaction) before the limit applies, so neither the
// result nor a stored object carries what it removes.
type Options struct {
	MaxBytes  int
	Bucket    string
	Objects   ObjectPutter
	KeyPrefix string
	Scrub     func(string) string
}

// Info describes what Render did. Bytes is the marshaled size of the returned
// result, FullBytes that of the complete result before storing or
// truncating; Notes counts blocks replaced by a text note.
type Info struct {
	Bytes     int
	FullBytes int
	Truncated bool
	StoredKey string
	Notes     int
}

// Render converts res into the tool_result for toolUseID (mapping: DESIGN.md).
// A result whose marshaled JSON exceeds the limit is stored in S3 and
// referenced when opts allow it, otherwise truncated with a visible marker.
// The only error wraps ErrStore, and comes with the truncated result. A nil
// res renders as an empty result.
func Render(ctx context.Context, toolUseID string, res *mcp.CallResult, opts Options) (ToolResult, Info, error) {
	if res == nil {
		res = &mcp.CallResult{}
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	blocks, notes := convert(res)
	if opts.Scrub != nil {
		for i := range blocks {
			if blocks[i].Text != "" {
				blocks[i].Text = opts.Scrub(blocks[i].Text)
			}
		}
	}
	tr := ToolResult{Type: TypeToolResult, ToolUseID: toolUseID, IsError: res.IsError, Content: blocks}
	full := marshal(tr)
	info := Info{Bytes: len(full), FullBytes: len(full), Notes: notes}
	if len(full) <= limit {
		return tr, info, nil
	}

	var storeErr error
	if opts.Bucket != "" && opts.Objects != nil {
		key := ObjectKey(opts.KeyPrefix, toolUseID, full)
		_, err := opts.Objects.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(opts.Bucket),
			Key:           aws.String(key),
			Body:          bytes.NewReader(full),
			ContentLength: aws.Int64(int64(len(full))),
			ContentType:   aws.String("application/json"),
		})
		if err == nil {
			ref := ToolResult{Type: TypeToolResult, ToolUseID: toolUseID, IsError: res.IsError, Content: []Block{{
				Type: TypeText,
				Text: fmt.Sprintf("[result stored: the full result is %d bytes, over the %d-byte limit for inline results; it is at s3://%s/%s]", len(full), limit, opts.Bucket, key),
			}}}
			info.Bytes = len(marshal(ref))
			info.StoredKey = key
			return ref, info, nil
		}
		storeErr = fmt.Errorf("%w: s3://%s/%s: %w", ErrStore, opts.Bucket, key, err)
	}

	cut, cutNotes := truncate(tr, limit)
	info.Bytes = len(marshal(cut))
	info.Truncated = true
	info.Notes += cutNotes
	return cut, info, storeErr
}

// ObjectKey is the S3 key Render stores an oversized result under: prefix,
// the tool use id reduced to [A-Za-z0-9_-] (at most 128 bytes, "none" when
// empty), a slash, the hex SHA-256 of body, ".json".
func ObjectKey(prefix, toolUseID string, body []byte) string {
	id := []byte(toolUseID)
	if len(id) > 128 {
		id = id[:128]
	}
	for i, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			id[i] = '_'
		}
	}
	if len(id) == 0 {
		id = []byte("none")
	}
	sum := sha256.Sum256(body)
	return prefix + string(id) + "/" + hex.EncodeToString(sum[:]) + ".json"
}

// marshal encodes v as the Lambda runtime does (encoding/json, HTML-escaped).
// Every type marshaled here is plain data, so it cannot fail.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("render: marshal %T: %v", v, err))
	}
	return b
}

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

const pdfType = "application/pdf"

// convert maps every content block and the structured content; it returns the
// blocks and how many of them are notes.
func convert(res *mcp.CallResult) ([]Block, int) {
	blocks := make([]Block, 0, len(res.Content)+1)
	notes := 0
	for _, c := range res.Content {
		b, note, ok := convertOne(c)
		if !ok {
			continue
		}
		if note {
			notes++
		}
		blocks = append(blocks, b)
	}
	if s, ok := uncarried(res.Structured, res.Content); ok {
		blocks = append(blocks, Block{Type: TypeText, Text: s})
	}
	return blocks, notes
}

// convertOne maps one content block. ok is false for a block with nothing to
// show (blank text: the Messages API rejects empty text blocks).
func convertOne(c mcp.Content) (b Block, note, ok bool) {
	switch c.Type {
	case "text":
		if strings.TrimSpace(c.Text) == "" {
			return Block{}, false, false
		}
		return textBlock(c.Text), false, true
	case "image":
		if mt := binaryType(c.MIMEType, c.Data, imageTypes); mt != "" {
			return base64Block(TypeImage, mt, c.Data), false, true
		}
		if len(c.Data) == 0 {
			return noteBlock("[image omitted: %s, no data]", typeName(c.MIMEType)), true, true
		}
		return noteBlock("[image omitted: %s, %d bytes; only PNG, JPEG, GIF and WebP images can be shown]", typeName(c.MIMEType), len(c.Data)), true, true
	case "audio":
		return noteBlock("[audio omitted: %s, %d bytes; audio cannot be shown]", typeName(c.MIMEType), len(c.Data)), true, true
	case "resource":
		if len(c.Data) > 0 {
			if binaryType(c.MIMEType, c.Data, map[string]bool{pdfType: true}) != "" {
				return base64Block(TypeDocument, pdfType, c.Data), false, true
			}
			return noteBlock("[resource omitted: %s, %s, %d bytes of binary data; only PDF documents can be shown]", clip(c.URI), typeName(c.MIMEType), len(c.Data)), true, true
		}
		if strings.TrimSpace(c.Text) == "" {
			return noteBlock("[empty resource: %s, %s]", clip(c.URI), typeName(c.MIMEType)), true, true
		}
		return textBlock(c.Text), false, true
	case "resource_link":
		if c.MIMEType != "" {
			return textBlock(fmt.Sprintf("[resource link: %s (%s)]", c.URI, clip(c.MIMEType))), false, true
		}
		return textBlock(fmt.Sprintf("[resource link: %s]", c.URI)), false, true
	default:
		return noteBlock("[content of type %q omitted: not supported]", clip(c.Type)), true, true
	}
}

func textBlock(s string) Block { return Block{Type: TypeText, Text: s} }

func noteBlock(format string, args ...any) Block { return textBlock(fmt.Sprintf(format, args...)) }

// typeName names a server-declared MIME type in a note.
func typeName(s string) string {
	if s == "" {
		return "unknown type"
	}
	return clip(s)
}

func base64Block(typ, mediaType string, data []byte) Block {
	return Block{Type: typ, Source: &Source{Type: SourceBase64, MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(data)}}
}

// binaryType picks the media type for data among allowed: the sniffed type
// when it is allowed (it corrects a mislabel), else the declared one when it
// is allowed, else "".
func binaryType(declared string, data []byte, allowed map[string]bool) string {
	if len(data) == 0 {
		return ""
	}
	if sniffed := mediaType(http.DetectContentType(data)); allowed[sniffed] {
		return sniffed
	}
	d := mediaType(declared)
	if d == "image/jpg" {
		d = "image/jpeg"
	}
	if allowed[d] {
		return d
	}
	return ""
}

// mediaType lower-cases a MIME type and drops its parameters.
func mediaType(s string) string {
	s, _, _ = strings.Cut(s, ";")
	return strings.ToLower(strings.TrimSpace(s))
}

// clip bounds a server-chosen string quoted in a note to 200 bytes.
func clip(s string) string { return text.Truncate(s, 200) }

// uncarried returns the structured content as compact JSON unless a text
// content block carries it: its trimmed text decodes to a JSON value equal to
// the structured value (whitespace, key order and number spelling aside).
func uncarried(structured json.RawMessage, content []mcp.Content) (string, bool) {
	trimmed := bytes.TrimSpace(structured)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return "", false
	}
	var want any
	if err := json.Unmarshal(trimmed, &want); err != nil {
		return string(trimmed), true
	}
	for _, c := range content {
		if c.Type != "text" {
			continue
		}
		var got any
		if json.Unmarshal([]byte(strings.TrimSpace(c.Text)), &got) == nil && reflect.DeepEqual(want, got) {
			return "", false
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return string(trimmed), true
	}
	return buf.String(), true
}
