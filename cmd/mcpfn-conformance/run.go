package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/shared/guard"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// Environment variables the command reads.
const (
	envScenario = "MCP_CONFORMANCE_SCENARIO"
	envContext  = "MCP_CONFORMANCE_CONTEXT"
	envToken    = "MCPFN_CONFORMANCE_BEARER_TOKEN"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// scenarioTimeout bounds one scenario run. The suite's scenarios finish in
// a second or two; one that waits on a request this client never answers
// (elicitation sent on the standalone stream) ends here.
const scenarioTimeout = 10 * time.Second

// loopbackAllow is the egress allow list: the suite's mock servers only.
var loopbackAllow = []string{"127.0.0.0/8", "::1/128"}

// call is one tool call a scenario makes after listing. A failed call ends
// the scenario unless mayFail is set.
type call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	mayFail   bool
}

// plan returns the calls a scenario makes, given the listing and the
// suite's context, or an error when the listing lacks what it needs.
type plan func(l mcp.Listing, scenarioCtx json.RawMessage) ([]call, error)

// plans maps each scenario to its calls. A scenario not listed here lists
// tools and makes the calls MCP_CONFORMANCE_CONTEXT names, if any.
var plans = map[string]plan{
	"initialize":                          contextCalls,
	"request-metadata":                    contextCalls,
	"json-schema-ref-no-deref":            contextCalls,
	"http-custom-headers":                 contextCalls,
	"tools_call":                          callTool("add_numbers", `{"a":5,"b":3}`),
	"sse-retry":                           callTool("test_reconnection", `{}`),
	"elicitation-sep1034-client-defaults": callTool("test_client_elicitation_defaults", `{}`),
	"http-standard-headers":               callFirst(`{}`),
	"http-invalid-tool-headers":           callEach(`{"region":"us-west1"}`),
	"json-schema-2020-12-preservation":    echoSchema("json_schema_2020_12_tool", "json_schema_echo"),
	"sep-2322-client-request-state": attempt(
		"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"),
}

// run executes the scenario named in the environment against the URL in
// args and returns the exit status. It writes progress to w, never the
// token.
func run(ctx context.Context, args []string, getenv func(string) string, w io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(w, "usage: mcpfn-conformance URL (scenario in "+envScenario+")")
		return exitUsage
	}
	rawURL := args[len(args)-1]
	scenario := getenv(envScenario)
	if scenario == "" {
		fmt.Fprintln(w, "mcpfn-conformance: "+envScenario+" is not set")
		return exitUsage
	}
	if err := checkLoopback(rawURL); err != nil {
		fmt.Fprintf(w, "mcpfn-conformance: %v\n", err)
		return exitUsage
	}
	scenarioCtx := json.RawMessage(getenv(envContext))
	if len(scenarioCtx) > 0 && !json.Valid(scenarioCtx) {
		fmt.Fprintln(w, "mcpfn-conformance: "+envContext+" is not valid JSON")
		return exitUsage
	}
	policy, err := guard.NewPolicy(loopbackAllow...)
	if err != nil {
		fmt.Fprintf(w, "mcpfn-conformance: %v\n", err)
		return exitUsage
	}
	guard.SetDefault(policy)

	p, ok := plans[scenario]
	if !ok {
		p = contextCalls
	}
	cfg := mcp.Config{URL: rawURL, BearerToken: getenv(envToken), HTTPClient: mcp.CallClient}
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	switch {
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		if cfg.BearerToken, err = clientCredentialsToken(ctx, rawURL, scenarioCtx); err != nil {
			fmt.Fprintf(w, "mcpfn-conformance: scenario %s failed: %v\n", scenario, err)
			return exitFail
		}
		if !ok {
			p = callFirst(`{}`)
		}
	case strings.HasPrefix(scenario, "auth/"):
		if cfg.OAuth, err = authorizer(scenarioCtx); err != nil {
			fmt.Fprintf(w, "mcpfn-conformance: %v\n", err)
			return exitUsage
		}
		if !ok {
			p = callFirst(`{}`)
		}
	}
	if err := runScenario(ctx, cfg, p, scenarioCtx, w); err != nil {
		fmt.Fprintf(w, "mcpfn-conformance: scenario %s failed: %v\n", scenario, err)
		return exitFail
	}
	fmt.Fprintf(w, "mcpfn-conformance: scenario %s done\n", scenario)
	return exitOK
}

// runScenario connects, lists, makes the planned calls and closes. A failed
// connect or listing ends the scenario, and so does a failed call unless the
// plan allows it; a result with isError is a result.
func runScenario(ctx context.Context, cfg mcp.Config, p plan, scenarioCtx json.RawMessage, w io.Writer) (err error) {
	conn, err := mcp.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, conn.Close())
		s := conn.Stats() // after Close: the closing DELETE is one of the requests
		fmt.Fprintf(w, "stats: %d requests, %d response bytes\n", s.Requests, s.ResponseBytes)
	}()
	s := conn.Stats()
	fmt.Fprintf(w, "connected: protocol %s, server %q %q\n", s.ProtocolVersion, s.ServerName, s.ServerVersion)

	listing, err := conn.ListTools(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "listed: %d tools, %d refused\n", len(listing.Tools), len(listing.Refused))
	for _, r := range listing.Refused {
		fmt.Fprintf(w, "  refused %q: %s\n", r.Name, r.Reason)
	}
	calls, err := p(listing, scenarioCtx)
	if err != nil {
		return err
	}
	for _, c := range calls {
		res, err := conn.CallTool(ctx, c.Name, c.Arguments)
		if err != nil && c.mayFail {
			fmt.Fprintf(w, "call %q failed, which this scenario allows: %v\n", c.Name, err)
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "called %q: isError %t, %s\n", c.Name, res.IsError, describe(res))
	}
	return nil
}

// describe summarises a result's blocks by type, for the log.
func describe(res *mcp.CallResult) string {
	types := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		types = append(types, c.Type)
	}
	out := fmt.Sprintf("%d block(s) [%s]", len(res.Content), strings.Join(types, " "))
	if res.Structured != nil {
		out += ", structured content"
	}
	return out
}

// checkLoopback refuses a URL whose host is not localhost or a loopback
// address: the guard alone would also admit public addresses.
func checkLoopback(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("server URL: %w", err)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
		return nil
	}
	return fmt.Errorf("server URL host %q is not loopback", net.JoinHostPort(host, u.Port()))
}

// contextCalls makes the calls listed under "toolCalls" in the suite's
// context, with their arguments verbatim.
func contextCalls(_ mcp.Listing, scenarioCtx json.RawMessage) ([]call, error) {
	if len(scenarioCtx) == 0 {
		return nil, nil
	}
	var c struct {
		ToolCalls []call `json:"toolCalls"`
	}
	if err := json.Unmarshal(scenarioCtx, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", envContext, err)
	}
	return c.ToolCalls, nil
}

// callTool calls name with args; name must have been listed and accepted.
func callTool(name, args string) plan {
	return func(l mcp.Listing, _ json.RawMessage) ([]call, error) {
		if _, err := find(l, name); err != nil {
			return nil, err
		}
		return []call{{Name: name, Arguments: json.RawMessage(args)}}, nil
	}
}

// attempt calls each named tool with {}, listed or not; a failed call does
// not end the scenario, whose checks look at which requests arrived.
func attempt(names ...string) plan {
	return func(mcp.Listing, json.RawMessage) ([]call, error) {
		calls := make([]call, 0, len(names))
		for _, n := range names {
			calls = append(calls, call{Name: n, Arguments: json.RawMessage(`{}`), mayFail: true})
		}
		return calls, nil
	}
}

// callFirst calls the first accepted tool, if any, with args.
func callFirst(args string) plan {
	return func(l mcp.Listing, _ json.RawMessage) ([]call, error) {
		if len(l.Tools) == 0 {
			return nil, nil
		}
		return []call{{Name: l.Tools[0].Name, Arguments: json.RawMessage(args)}}, nil
	}
}

// callEach calls every accepted tool with args.
func callEach(args string) plan {
	return func(l mcp.Listing, _ json.RawMessage) ([]call, error) {
		calls := make([]call, 0, len(l.Tools))
		for _, t := range l.Tools {
			calls = append(calls, call{Name: t.Name, Arguments: json.RawMessage(args)})
		}
		return calls, nil
	}
}

// echoSchema calls echo with {"schema": <focal's input schema as listed>}.
func echoSchema(focal, echo string) plan {
	return func(l mcp.Listing, _ json.RawMessage) ([]call, error) {
		t, err := find(l, focal)
		if err != nil {
			return nil, err
		}
		if _, err := find(l, echo); err != nil {
			return nil, err
		}
		var args bytes.Buffer
		args.WriteString(`{"schema":`)
		args.Write(t.InputSchema)
		args.WriteString(`}`)
		return []call{{Name: echo, Arguments: args.Bytes()}}, nil
	}
}

// find returns the accepted tool name, or an error saying it was refused
// (with the reason) or not listed.
func find(l mcp.Listing, name string) (mcp.Tool, error) {
	for _, t := range l.Tools {
		if t.Name == name {
			return t, nil
		}
	}
	for _, r := range l.Refused {
		if r.Name == name {
			return mcp.Tool{}, fmt.Errorf("tool %q was refused: %s", name, r.Reason)
		}
	}
	return mcp.Tool{}, fmt.Errorf("tool %q was not listed", name)
}
