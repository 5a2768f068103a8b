package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/mcpfn/mcpfn/internal/localstack"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/text"
)

// printer writes what a local run did, for people.
type printer struct {
	w io.Writer
}

func (p *printer) f(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

func (p *printer) stack(st *stack) {
	p.f("\nLocal stack (everything on 127.0.0.1, stopped at the end):\n")
	p.f("  example MCP server  %s\n", st.serverURL)
	if o := st.oauth; o != nil {
		p.f("  OAuth MCP server    %s (the example server; it requires a bearer token)\n", o.serverURL)
		p.f("  authorization srv   %s (issues those tokens; rotates refresh tokens)\n", o.as.Issuer)
		p.f("  vault %-13s secret %s in moto: an mcp_oauth credential for the OAuth\n", oauthVault, o.secret)
		p.f("                      server whose access token expired an hour ago, and a refresh token\n")
	}
	p.f("  store               %s\n", st.storeDesc)
	p.f("  discover            aws-lambda-rie pid %d\n", st.discover.PID())
	p.f("  call                aws-lambda-rie pid %d\n", st.call.PID())
}

func (p *printer) skipped(inv invocation, why string) {
	p.f("\n==> %s  %s\n  skipped: %s\n", inv.function, inv.path, why)
}

// oauth prints what an invocation did to the OAuth vault; never a token.
func (p *printer) oauth(r oauthReport) {
	for _, c := range r.Credentials {
		p.f("  log: work item credential %s\n", c)
	}
	if r.Refreshed {
		p.f("  log: oauth token refreshed, vault %s, rotated %v\n", oauthVault, r.LoggedRotated)
	}
	switch {
	case r.Refreshed && r.Rotated:
		p.f("  vault %s: the access token had expired, so it was refreshed first (%d token request);\n", oauthVault, r.TokenRequests)
		p.f("    the vault now holds the new access token (expires %s) and a rotated refresh token\n", r.ExpiresAt.Local().Format("15:04:05"))
	case r.Refreshed:
		p.f("  vault %s: the access token was refreshed (%d token request); the refresh token did not rotate\n", oauthVault, r.TokenRequests)
	case r.TokenRequests == 0:
		p.f("  vault %s: the access token is still fresh (expires %s); no token request\n", oauthVault, r.ExpiresAt.Local().Format("15:04:05"))
	default:
		p.f("  vault %s: %d token request(s), no refresh stored\n", oauthVault, r.TokenRequests)
	}
}

func (p *printer) invoking(inv invocation) {
	p.f("\n==> %s  %s\n", inv.function, inv.path)
}

func (p *printer) result(inv invocation, res localstack.Result) {
	if res.ErrorType != "" {
		p.f("  failed: %s: %s\n", res.ErrorType, res.ErrorMessage)
		p.errorTypes(res.Logs)
		return
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(res.Payload, &probe) != nil {
		p.f("  result: %s\n", res.Payload)
		return
	}
	switch {
	case probe["batchItemFailures"] != nil:
		p.batch(inv, res.Payload)
	case probe["type"] != nil && string(probe["type"]) == `"tool_result"`:
		p.toolResult(res.Payload)
	case probe["tool_count"] != nil:
		p.discovery(res.Payload)
	case probe["swept"] != nil:
		p.swept(res.Payload)
	default:
		p.f("  result: %s\n", indentJSON(res.Payload, "  "))
	}
	p.errorTypes(res.Logs)
}

func (p *printer) discovery(payload []byte) {
	var r struct {
		CatalogID       string            `json:"catalog_id"`
		Version         string            `json:"version"`
		Unchanged       bool              `json:"unchanged"`
		ToolCount       int               `json:"tool_count"`
		Refused         []json.RawMessage `json:"refused"`
		ProtocolVersion string            `json:"protocol_version"`
		Server          struct{ Name, Version string }
		Requests        int   `json:"requests"`
		ResponseBytes   int64 `json:"response_bytes"`
		DurationMS      int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		p.f("  result: %s\n", payload)
		return
	}
	change := "new version"
	if r.Unchanged {
		change = "unchanged"
	}
	p.f("  discovered %d tools (%d refused) into catalog %q: %s %s\n", r.ToolCount, len(r.Refused), r.CatalogID, change, r.Version)
	p.f("  server %s %s, protocol %s; %d requests, %d bytes, %d ms\n",
		r.Server.Name, r.Server.Version, r.ProtocolVersion, r.Requests, r.ResponseBytes, r.DurationMS)
}

func (p *printer) swept(payload []byte) {
	var r struct {
		Swept struct {
			Due        int `json:"due"`
			Enqueued   int `json:"enqueued"`
			BackingOff int `json:"backing_off"`
		} `json:"swept"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		p.f("  result: %s\n", payload)
		return
	}
	p.f("  swept: %d due, %d enqueued, %d backing off\n", r.Swept.Due, r.Swept.Enqueued, r.Swept.BackingOff)
}

func (p *printer) makingDue(ids []string) {
	for _, id := range ids {
		p.f("\n  (localrun makes catalog %q due now: it sets the head's next_due to the present, as its refresh interval passing would)\n", id)
	}
}

// queued prints the discover requests on the discover queue: catalog and
// vaults (a re-discovery carries no URL: discover opens the sealed one).
func (p *printer) queued(bodies []string) {
	if len(bodies) == 0 {
		p.f("  discover queue: empty\n")
	}
	for _, b := range bodies {
		var r struct {
			CatalogID string   `json:"catalog_id"`
			VaultIDs  []string `json:"vault_ids"`
		}
		if json.Unmarshal([]byte(b), &r) != nil {
			p.f("  discover queue: a message that is not a discover request\n")
			continue
		}
		p.f("  discover queue: a re-discovery of catalog %q (its sealed server URL, vaults %v)\n", r.CatalogID, r.VaultIDs)
	}
}

func (p *printer) toolResult(payload []byte) {
	var r struct {
		ToolUseID string `json:"tool_use_id"`
		IsError   bool   `json:"is_error"`
		Content   []struct {
			Type   string `json:"type"`
			Text   string `json:"text"`
			Source struct {
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
			} `json:"source"`
		} `json:"content"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		p.f("  result: %s\n", payload)
		return
	}
	p.f("  tool_result for %q, is_error: %v\n", r.ToolUseID, r.IsError)
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			p.f("    %s\n", strings.ReplaceAll(c.Text, "\n", "\n    "))
		default:
			p.f("    [%s %s, %d base64 bytes]\n", c.Type, c.Source.MediaType, len(c.Source.Data))
		}
	}
}

func (p *printer) batch(inv invocation, payload []byte) {
	var r struct {
		Failures []struct {
			ID string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	_ = json.Unmarshal(payload, &r)
	n := len(requests(inv.payload))
	if len(r.Failures) == 0 {
		p.f("  SQS batch: all %d records done (none return to the queue)\n", n)
		return
	}
	ids := make([]string, 0, len(r.Failures))
	for _, f := range r.Failures {
		ids = append(ids, f.ID)
	}
	p.f("  SQS batch: %d of %d records return to the queue: %s\n", len(ids), n, strings.Join(ids, ", "))
}

func (p *printer) taskReports(reps []localstack.TaskReport) {
	for _, r := range reps {
		switch r.Action() {
		case "SendTaskSuccess":
			p.f("  Step Functions %s (task token %q): %s\n", r.Action(), r.TaskToken, text.Truncate(string(r.Output), 300))
		default:
			p.f("  Step Functions %s (task token %q): %s: %s\n", r.Action(), r.TaskToken, r.Error, text.Truncate(r.Cause, 300))
		}
	}
}

// errorTypes prints the summary log lines that carry an error_type.
func (p *printer) errorTypes(logs []string) {
	for _, l := range logs {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		if et, _ := line["error_type"].(string); et != "" {
			p.f("  log: %v %v: work item %v, outcome %v, error_type %s\n", line["level"], line["msg"], line["work_item"], line["outcome"], et)
		}
	}
}

func (p *printer) deadLetters(moved int) {
	if moved > 0 {
		p.f("  %d permanently bad record(s) moved to the dead-letter queue\n", moved)
	}
}

func (p *printer) catalog(id string, c *catalog.Catalog, err error) {
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		p.f("\n  Catalog %q: nothing stored.\n", id)
		return
	case err != nil:
		p.f("\n  Catalog %q: cannot read it: %v\n", id, err)
		return
	}
	p.f("\n  Stored catalog %q", id)
	if c.Version != "" {
		p.f(" (version %s, protocol %s, server %s %s)", c.Version, c.ProtocolVersion, c.ServerName, c.ServerVersion)
	}
	p.f(":\n")
	width := 0
	for _, t := range c.Tools {
		width = max(width, len(t.Name))
	}
	for _, t := range c.Tools {
		p.f("    %-*s  %s\n", width, t.Name, t.Description)
		if args := describeArgs(t.InputSchema); args != "" {
			p.f("    %-*s  arguments: %s\n", width, "", args)
		}
	}
	for _, r := range c.Refused {
		p.f("    refused %s: %s\n", r.Name, r.Reason)
	}
	if f := c.LastFailure; f != nil {
		p.f("    last failure %s at %s: %s\n", f.ErrorType, f.At.Format("15:04:05"), f.Message)
	}
}

// describeArgs summarises a JSON Schema's top-level properties, e.g.
// "a (number), op (string), note (string, optional)".
func describeArgs(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		typ := fmt.Sprint(s.Properties[n].Type)
		if s.Properties[n].Type == nil {
			typ = "any"
		}
		if !slices.Contains(s.Required, n) {
			typ += ", optional"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, typ))
	}
	return strings.Join(parts, ", ")
}

func indentJSON(b []byte, prefix string) string {
	var out bytes.Buffer
	if json.Indent(&out, b, prefix, "  ") != nil {
		return string(b)
	}
	return out.String()
}
