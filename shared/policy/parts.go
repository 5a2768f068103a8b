package policy

import (
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Parts is t's Definition by part, named as Changed names them: the
// catalog.Definer that quarantine compares with.
func Parts(t mcp.Tool) []catalog.DefinitionPart {
	d := DefinitionOf(t)
	return []catalog.DefinitionPart{
		{Name: "name", Hash: d.Name},
		{Name: "title", Hash: d.Title},
		{Name: "description", Hash: d.Description},
		{Name: "input schema", Hash: d.InputSchema},
		{Name: "output schema", Hash: d.Output},
		{Name: "annotations", Hash: d.Annotations},
	}
}

var _ catalog.Definer = Parts
