package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpfn/mcpfn/shared/mcp"
)

// ErrVersionMissing: the head names a version whose items are gone (its
// version item, manifest or tools deleted out of band). Reading again does
// not help: the catalog must be discovered again.
var ErrVersionMissing = errors.New("catalog: version missing")

// missing reports, after a read of h's version came back incomplete,
// whether the head still names that version: then the version's items
// are gone and it returns an error wrapping ErrVersionMissing that names
// id, the version and what is missing. nil means the version was replaced
// meanwhile: read again.
func (s *Dynamo) missing(ctx context.Context, id string, h head, tools []mcp.Tool, refused []mcp.Refusal) error {
	again, err := s.head(ctx, id)
	switch {
	case err != nil:
		return err
	case !again.exists || again.version != h.version:
		return nil
	case tools == nil:
		return fmt.Errorf("%w: catalog %q version %s: its version item or manifest is missing", ErrVersionMissing, id, h.version)
	}
	return fmt.Errorf("%w: catalog %q version %s: %d of its %d tools and %d of its %d refusals are missing",
		ErrVersionMissing, id, h.version, h.toolCount-len(tools), h.toolCount, h.refusedCount-len(refused), h.refusedCount)
}

// missingFile is ErrVersionMissing for the directory store: the version
// file the head names is gone.
func missingFile(id, version string) error {
	return fmt.Errorf("%w: catalog %q version %s: its version file is missing", ErrVersionMissing, id, version)
}
