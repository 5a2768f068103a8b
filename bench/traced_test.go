package bench

import (
	"encoding/json"
	"testing"

	"github.com/mcpfn/mcpfn/bench/item"
	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// TestExporterRun: a traced item runs through shared/mcp and its spans
// reach the loopback receiver before Run returns.
func TestExporterRun(t *testing.T) {
	s := mcptest.NewServer(t, mcptest.Options{})
	x, err := StartExporter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = x.Stop(t.Context()) }()
	spec := item.Spec{URL: s.URL, HTTPClient: s.Client(), Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), WantText: "hi"}
	if err := x.Run(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	if x.received.Load() == 0 {
		t.Error("no export reached the receiver")
	}
}
