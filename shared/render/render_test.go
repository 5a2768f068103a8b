package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/mcp"
	"github.com/mcpfn/mcpfn/shared/render"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Magic numbers, enough for content sniffing.
var (
	pngData  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	jpegData = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	gifData  = []byte("GIF89a\x01\x00\x01\x00")
	webpData = []byte("RIFF\x1a\x00\x00\x00WEBPVP8 ")
	pdfData  = []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
)

// golden compares got, marshaled as the Lambda runtime does and indented,
// with testdata/<name>.json, or rewrites the file under -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name      string
		res       *mcp.CallResult
		wantNotes int
	}{
		{"text", &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "Hello <world> & \"you\"\n"}}}, 0},
		{"blank_text_dropped", &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: ""}, {Type: "text", Text: " \n\t"}, {Type: "text", Text: "kept"}}}, 0},
		{"images", &mcp.CallResult{Content: []mcp.Content{
			{Type: "image", MIMEType: "image/png", Data: pngData},
			{Type: "image", MIMEType: "image/jpeg", Data: jpegData},
			{Type: "image", MIMEType: "image/gif", Data: gifData},
			{Type: "image", MIMEType: "image/webp", Data: webpData},
		}}, 0},
		{"image_media_type", &mcp.CallResult{Content: []mcp.Content{
			{Type: "image", MIMEType: "IMAGE/PNG; charset=binary", Data: []byte("declared png, unsniffable")},
			{Type: "image", MIMEType: "image/jpg", Data: []byte("common alias")},
			{Type: "image", MIMEType: "image/png", Data: jpegData}, // mislabelled: the sniffed type wins
			{Type: "image", Data: gifData},                         // undeclared: sniffed
		}}, 0},
		{"image_unsupported", &mcp.CallResult{Content: []mcp.Content{
			{Type: "image", MIMEType: "image/svg+xml", Data: []byte("<svg xmlns='http://www.w3.org/2000/svg'/>")},
			{Type: "image", MIMEType: "image/bmp", Data: make([]byte, 1234)},
			{Type: "image", Data: []byte("no type, no magic")},
			{Type: "image", MIMEType: "image/png"}, // no data
		}}, 4},
		{"audio", &mcp.CallResult{Content: []mcp.Content{{Type: "audio", MIMEType: "audio/wav", Data: make([]byte, 4096)}}}, 1},
		{"resource_text", &mcp.CallResult{Content: []mcp.Content{{Type: "resource", URI: "file:///notes.md", MIMEType: "text/markdown", Text: "# Notes\n"}}}, 0},
		{"resource_empty", &mcp.CallResult{Content: []mcp.Content{{Type: "resource", URI: "file:///empty.txt", MIMEType: "text/plain"}}}, 1},
		{"resource_pdf", &mcp.CallResult{Content: []mcp.Content{
			{Type: "resource", URI: "file:///a.pdf", MIMEType: "application/pdf", Data: pdfData},
			{Type: "resource", URI: "file:///b.bin", MIMEType: "application/octet-stream", Data: pdfData}, // sniffed
		}}, 0},
		{"resource_blob", &mcp.CallResult{Content: []mcp.Content{
			{Type: "resource", URI: "file:///data.zip", MIMEType: "application/zip", Data: make([]byte, 2048)},
			{Type: "resource", URI: "file:///x", Data: []byte{1, 2, 3}},
		}}, 2},
		{"resource_link", &mcp.CallResult{Content: []mcp.Content{
			{Type: "resource_link", URI: "https://example.com/report.csv", MIMEType: "text/csv"},
			{Type: "resource_link", URI: "file:///no-type"},
		}}, 0},
		{"unknown_type", &mcp.CallResult{Content: []mcp.Content{{Type: "hologram"}}}, 1},
		{"structured_carried", &mcp.CallResult{
			Content:    []mcp.Content{{Type: "text", Text: "{\n  \"b\": [1, 2.0],\n  \"a\": \"x\"\n}"}},
			Structured: json.RawMessage(`{"a":"x","b":[1,2]}`),
		}, 0},
		{"structured_not_carried", &mcp.CallResult{
			Content:    []mcp.Content{{Type: "text", Text: "The temperature is 22 °C."}, {Type: "text", Text: `{"temp": 21}`}},
			Structured: json.RawMessage(`{ "temp": 22, "unit": "C" }`),
		}, 0},
		{"structured_only", &mcp.CallResult{Structured: json.RawMessage(`{"ok":true}`)}, 0},
		{"structured_null", &mcp.CallResult{Structured: json.RawMessage(`null`)}, 0},
		{"is_error", &mcp.CallResult{IsError: true, Content: []mcp.Content{{Type: "text", Text: "file not found"}}}, 0},
		{"empty", &mcp.CallResult{}, 0},
		{"nil", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, info, err := render.Render(t.Context(), "toolu_01", tt.res, render.Options{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, got)
			raw, _ := json.Marshal(got)
			want := render.Info{Bytes: len(raw), FullBytes: len(raw), Notes: tt.wantNotes}
			if diff := cmp.Diff(want, info); diff != "" {
				t.Errorf("Info (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeS3 records PutObject calls and fails when err is set.
type fakeS3 struct {
	mu   sync.Mutex
	err  error
	puts []putCall
}

type putCall struct {
	Bucket, Key, ContentType string
	Body                     []byte
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts = append(f.puts, putCall{aws.ToString(in.Bucket), aws.ToString(in.Key), aws.ToString(in.ContentType), body})
	if f.err != nil {
		return nil, f.err
	}
	return &s3.PutObjectOutput{}, nil
}

// big is a result of about n bytes of text in three blocks, with characters
// JSON escapes.
func big(n int) *mcp.CallResult {
	chunk := strings.Repeat("line <one> & \"two\"\n", n/3/19+1)
	return &mcp.CallResult{IsError: true, Content: []mcp.Content{
		{Type: "text", Text: "first " + chunk},
		{Type: "text", Text: "second " + chunk},
		{Type: "text", Text: "third " + chunk},
	}}
}

func TestOversizedStored(t *testing.T) {
	res := big(3000)
	full, _, err := render.Render(t.Context(), "toolu_big/1", res, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fullJSON, _ := json.Marshal(full)

	f := &fakeS3{}
	opts := render.Options{MaxBytes: 1000, Bucket: "results", Objects: f, KeyPrefix: "calls/"}
	got, info, err := render.Render(t.Context(), "toolu_big/1", res, opts)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "oversized_stored", got)
	key := render.ObjectKey("calls/", "toolu_big/1", fullJSON)
	if !strings.HasPrefix(key, "calls/toolu_big_1/") || !strings.HasSuffix(key, ".json") {
		t.Errorf("key %q: want calls/toolu_big_1/<sha256>.json", key)
	}
	wantPuts := []putCall{{Bucket: "results", Key: key, ContentType: "application/json", Body: fullJSON}}
	if diff := cmp.Diff(wantPuts, f.puts); diff != "" {
		t.Errorf("PutObject calls (-want +got):\n%s", diff)
	}
	gotJSON, _ := json.Marshal(got)
	wantInfo := render.Info{Bytes: len(gotJSON), FullBytes: len(fullJSON), StoredKey: key}
	if diff := cmp.Diff(wantInfo, info); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
}

func TestOversizedTruncated(t *testing.T) {
	for _, tt := range []struct {
		name      string
		res       *mcp.CallResult
		limit     int
		wantNotes int
	}{
		{"oversized_truncated", big(3000), 1000, 0},
		{"oversized_images", &mcp.CallResult{Content: []mcp.Content{
			{Type: "text", Text: "before"},
			{Type: "image", MIMEType: "image/png", Data: append(pngData, make([]byte, 3000)...)},
			{Type: "resource", MIMEType: "application/pdf", Data: append(pdfData, make([]byte, 3000)...)},
			{Type: "text", Text: "after the images"},
		}}, 800, 2},
		{"oversized_marker_only", big(3000), 10, 0}, // too small for anything but the marker
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, info, err := render.Render(t.Context(), "toolu_t", tt.res, render.Options{MaxBytes: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, got)
			raw, _ := json.Marshal(got)
			if !info.Truncated || info.Bytes != len(raw) || info.StoredKey != "" || info.Notes != tt.wantNotes {
				t.Errorf("Info = %+v, want Truncated, Bytes %d, no StoredKey, Notes %d", info, len(raw), tt.wantNotes)
			}
			if len(raw) > tt.limit && tt.name != "oversized_marker_only" {
				t.Errorf("truncated result is %d bytes, over the %d limit", len(raw), tt.limit)
			}
			last := got.Content[len(got.Content)-1]
			if !strings.HasPrefix(last.Text, "[truncated: ") {
				t.Errorf("last block %+v is not the truncation marker", last)
			}
			if got.IsError != tt.res.IsError || got.ToolUseID != "toolu_t" {
				t.Errorf("envelope changed: %+v", got)
			}
		})
	}
}

func TestStoreFailureTruncates(t *testing.T) {
	f := &fakeS3{err: errors.New("AccessDenied")}
	got, info, err := render.Render(t.Context(), "toolu_x", big(3000), render.Options{MaxBytes: 1000, Bucket: "results", Objects: f})
	if !errors.Is(err, render.ErrStore) || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("Render error %v, want ErrStore with the cause", err)
	}
	if len(f.puts) != 1 {
		t.Errorf("%d PutObject calls, want 1", len(f.puts))
	}
	raw, _ := json.Marshal(got)
	if !info.Truncated || len(raw) > 1000 || info.StoredKey != "" {
		t.Errorf("with a store failure: Info %+v and %d bytes; want the truncated result", info, len(raw))
	}
}

func TestBucketWithoutPutterTruncates(t *testing.T) {
	_, info, err := render.Render(t.Context(), "toolu_x", big(3000), render.Options{MaxBytes: 1000, Bucket: "results"})
	if err != nil || !info.Truncated {
		t.Errorf("Render = %+v, %v; want truncated, no error", info, err)
	}
}

func TestDefaultMaxBytes(t *testing.T) {
	for _, tt := range []struct {
		name          string
		size          int
		wantTruncated bool
	}{
		{"well under", render.DefaultMaxBytes / 2, false},
		{"over", render.DefaultMaxBytes + 1000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := &mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: strings.Repeat("a", tt.size)}}}
			got, info, err := render.Render(t.Context(), "toolu_d", res, render.Options{})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(got)
			if info.Truncated != tt.wantTruncated || len(raw) > render.DefaultMaxBytes {
				t.Errorf("Truncated %t with %d bytes; want Truncated %t within %d", info.Truncated, len(raw), tt.wantTruncated, render.DefaultMaxBytes)
			}
		})
	}
}

func TestObjectKey(t *testing.T) {
	for _, tt := range []struct {
		name, prefix, id, wantPrefix string
	}{
		{"plain", "p/", "toolu_01A-b", "p/toolu_01A-b/"},
		{"separators replaced", "", "../../etc/x y", "______etc_x_y/"},
		{"empty id", "r/", "", "r/none/"},
		{"long id clipped", "", strings.Repeat("a", 300), strings.Repeat("a", 128) + "/"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := render.ObjectKey(tt.prefix, tt.id, []byte("body"))
			const sha = "230d8358dc8e8890b4c58deeb62912ee2f20357ae92a5cc861b98e68fe31acb5" // sha256("body")
			if want := tt.wantPrefix + sha + ".json"; got != want {
				t.Errorf("ObjectKey = %q, want %q", got, want)
			}
		})
	}
}

// FuzzTruncate checks, for any text and limit, that a truncated result fits
// the limit whenever the bare marker does, and always ends with the marker.
func FuzzTruncate(f *testing.F) {
	f.Add("hello <&> \"world\"\n\u2028\x01\xff", 150, 3)
	f.Add(strings.Repeat("é", 400), 300, 1)
	f.Fuzz(func(t *testing.T, text string, limit, copies int) {
		if limit < 0 || limit > 100_000 || copies < 0 || copies > 20 {
			return
		}
		res := &mcp.CallResult{}
		for range copies {
			res.Content = append(res.Content, mcp.Content{Type: "text", Text: text})
		}
		res.Content = append(res.Content, mcp.Content{Type: "image", MIMEType: "image/png", Data: []byte(text)})
		got, info, err := render.Render(t.Context(), "toolu_f", res, render.Options{MaxBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(got)
		if info.Bytes != len(raw) {
			t.Fatalf("Info.Bytes %d, marshaled %d", info.Bytes, len(raw))
		}
		if limit == 0 {
			limit = render.DefaultMaxBytes
		}
		if !info.Truncated {
			if len(raw) > limit {
				t.Fatalf("not truncated but %d bytes over %d", len(raw), limit)
			}
			return
		}
		last := got.Content[len(got.Content)-1]
		if !strings.HasPrefix(last.Text, "[truncated: ") {
			t.Fatalf("last block %q is not the marker", last.Text)
		}
		if len(got.Content) > 1 && len(raw) > limit {
			t.Fatalf("%d bytes over the %d limit", len(raw), limit)
		}
		for _, b := range got.Content {
			if b.Type == "text" && strings.TrimSpace(b.Text) == "" {
				t.Fatalf("blank text block in %s", raw)
			}
		}
	})
}

// BenchmarkRenderOversized renders an answer at shared/mcp's 8 MiB budget
// into the default limit.
func BenchmarkRenderOversized(b *testing.B) {
	res := &mcp.CallResult{Content: []mcp.Content{
		{Type: "text", Text: strings.Repeat("log line <x> & \"y\"\n", mcp.MaxResponseBytes/2/19)},
		{Type: "image", MIMEType: "image/png", Data: append(pngData, make([]byte, mcp.MaxResponseBytes/4)...)},
	}}
	for b.Loop() {
		if _, info, err := render.Render(b.Context(), "toolu_b", res, render.Options{}); err != nil || !info.Truncated {
			b.Fatal(info, err)
		}
	}
}
