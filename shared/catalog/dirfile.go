package catalog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

type dirVersion struct {
	Tools   []dirTool     `json:"tools"`
	Refused []mcp.Refusal `json:"refused"`
}

// dirTool keeps schemas and meta as bytes (base64 in JSON) so they
// round-trip exactly. model_name is omitted when it is the name.
type dirTool struct {
	Name         string          `json:"name"`
	ModelName    string          `json:"model_name,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  []byte          `json:"input_schema"`
	OutputSchema []byte          `json:"output_schema,omitempty"`
	Annotations  *dirAnnotations `json:"annotations,omitempty"`
	Meta         []byte          `json:"meta,omitempty"`
}

type dirAnnotations struct {
	ReadOnlyHint    *bool  `json:"read_only_hint,omitempty"`
	DestructiveHint *bool  `json:"destructive_hint,omitempty"`
	IdempotentHint  *bool  `json:"idempotent_hint,omitempty"`
	OpenWorldHint   *bool  `json:"open_world_hint,omitempty"`
	Other           []byte `json:"other,omitempty"`
}

func toDirTool(t mcp.Tool) dirTool {
	d := dirTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
		OutputSchema: t.OutputSchema, Meta: t.Meta}
	if t.ModelName != t.Name {
		d.ModelName = t.ModelName
	}
	if a := t.Annotations; a != nil {
		d.Annotations = &dirAnnotations{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint, a.Other}
	}
	return d
}

func (d dirTool) tool() mcp.Tool {
	t := mcp.Tool{Name: d.Name, ModelName: d.ModelName, Title: d.Title, Description: d.Description,
		InputSchema: d.InputSchema, OutputSchema: nonEmpty(d.OutputSchema), Meta: nonEmpty(d.Meta)}
	if t.ModelName == "" {
		t.ModelName = t.Name
	}
	if a := d.Annotations; a != nil {
		t.Annotations = &mcp.Annotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint, Other: nonEmpty(a.Other)}
	}
	return t
}

func versionFiles(dir string) []string {
	des, _ := os.ReadDir(dir)
	var vs []string
	for _, de := range des {
		n := de.Name()
		if n != headFile && strings.HasSuffix(n, versionExt) && !strings.HasPrefix(n, ".") {
			vs = append(vs, strings.TrimSuffix(n, versionExt))
		}
	}
	slices.Sort(vs)
	return vs
}

// readHead reads head.json; a missing one yields the zero dirHead.
func readHead(dir string) (dirHead, error) {
	var h dirHead
	err := readJSON(filepath.Join(dir, headFile), &h)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dirHead{}, nil
	case err != nil:
		return dirHead{}, err
	}
	return h, h.check(dir)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("catalog: %s: %w", path, err)
	}
	return nil
}

// encodeVersion writes p as a dirVersion one tool at a time, so a version
// never exists as one buffer.
func encodeVersion(w io.Writer, p prepared) error {
	enc := json.NewEncoder(w)
	if _, err := io.WriteString(w, `{"tools":[`); err != nil {
		return err
	}
	for i, e := range p.entries {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(toDirTool(e.tool)); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, `],"refused":`); err != nil {
		return err
	}
	if err := enc.Encode(p.refused); err != nil {
		return err
	}
	_, err := io.WriteString(w, "}")
	return err
}

// writeJSON writes v to dir/name atomically (see writeFile).
func writeJSON(dir, name string, v any) error {
	return writeFile(dir, name, func(w io.Writer) error { return json.NewEncoder(w).Encode(v) })
}

// writeFile writes dir/name atomically: write fills a synced temporary
// file, which is renamed over the target.
func writeFile(dir, name string, write func(w io.Writer) error) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer os.Remove(f.Name()) // fails harmlessly after the rename
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		f.Close()
		return fmt.Errorf("catalog: write %s: %w", name, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("catalog: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("catalog: sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("catalog: close %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// lock takes the catalog's file lock, polling until ctx ends.
func (s *Dir) lock(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("catalog: lock %s: %w", dir, err)
		}
		if ok {
			return func() { f.Close() }, nil // closing releases the lock
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%w: lock %s: %w", ErrUnavailable, dir, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}
