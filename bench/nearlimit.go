package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Near-limit answers: valid, and as large as the connection budget allows.
const (
	NearLimitTools       = 8000
	NearLimitListBytes   = 7_600_000 // a listing's result on the wire
	NearLimitResultBytes = 7_900_000 // a call result's text on the wire
)

// NearLimitHandler serves the stateless mcptest fixture, except that
// tools/list answers NearLimitTools valid tools in one page of about
// NearLimitListBytes, and tools/call answers one text block of
// NearLimitResultBytes, in format (FormatJSON or FormatSSE), built once.
func NearLimitHandler(format string) http.Handler {
	list := nearLimitTools()
	text := strings.Repeat("r", NearLimitResultBytes)
	result, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	return fixtureExcept(func(w http.ResponseWriter, method string, id json.RawMessage) bool {
		answer := map[string][]byte{"tools/list": list, "tools/call": result}[method]
		if answer == nil {
			return false
		}
		writeResult(w, format, id, answer)
		return true
	})
}

// nearLimitTools is a tools/list result of NearLimitTools distinct, valid
// tools totalling about NearLimitListBytes.
func nearLimitTools() []byte {
	per := NearLimitListBytes / NearLimitTools
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["query"]}`)
	tools := make([]tool, NearLimitTools)
	for i := range tools {
		name := fmt.Sprintf("tool_%05d", i)
		desc := fmt.Sprintf("Tool %d: ", i)
		desc += strings.Repeat("d", max(0, per-len(name)-len(desc)-len(schema)-60))
		tools[i] = tool{Name: name, Description: desc, InputSchema: schema}
	}
	b, _ := json.Marshal(map[string]any{"tools": tools})
	return b
}
