package runner

import (
	"encoding/json"
	"testing"
)

// callRequest has the call function's request fields (functions/call).
type callRequest struct {
	ServerURL      string          `json:"server_url"`
	ToolName       string          `json:"tool_name"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	VaultIDs       []string        `json:"vault_ids,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	CatalogID      string          `json:"catalog_id,omitempty"`
	TaskToken      string          `json:"task_token,omitempty"`
}

// BenchmarkDecode decodes events/call-direct.json's request.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"server_url":"https://mcp.example.com/mcp","tool_name":"word_stats",` +
		`"arguments":{"text":"one two three\nfour"},"tool_use_id":"toolu_01WordStats0000000000000"}`)
	b.ReportAllocs()
	for b.Loop() {
		var r callRequest
		if err := Decode(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}
