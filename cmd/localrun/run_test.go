package main

import (
	"bytes"
	"errors"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunShowsCatalogAndToolResult is `make run` with the embedded
// directory store: real binaries under the RIE and the example server. It
// checks the output a user sees, that the OAuth sample is skipped (no
// vaults without moto), and that every process it started is gone.
func TestRunShowsCatalogAndToolResult(t *testing.T) {
	var out, logs bytes.Buffer
	o := options{
		events:  []string{"../../events/discover-direct.json", "../../events/call-direct.json", "../../events/discover-oauth.json"},
		timeout: 30 * time.Second,
		store:   "dir",
		verbose: true,
	}
	if err := run(t.Context(), o, &out, &logs); err != nil {
		t.Fatalf("run: %v\noutput:\n%s\nlogs:\n%s", err, &out, &logs)
	}
	got := out.String()
	for _, want := range []string{
		"embedded directory store",
		`discovered 3 tools (0 refused) into catalog "example"`,
		`Stored catalog "example"`,
		"calculate     Applies add, subtract, multiply or divide",
		"arguments: a (number), b (number), op (string)",
		`tool_result for "toolu_01A09q90qw90lq917835lq9", is_error: false`,
		"\n    5\n",
		"skipped: it names the OAuth vault example-oauth, and the directory store keeps no vaults",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// Each invocation's trace, as a waterfall (waterfall.go).
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^    discover +[0-9.]+ ms \|[ █]+\|$`),
		regexp.MustCompile(`(?m)^    call +[0-9.]+ ms \|[ █]+\|$`),
		regexp.MustCompile(`(?m)^      tools/call calculate +[0-9.]+ ms \|[ █]+\|$`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output lacks a waterfall line matching %s:\n%s", want, got)
		}
	}
	if !strings.Contains(logs.String(), `call | {"time"`) {
		t.Errorf("-v did not stream the call function's logs:\n%s", &logs)
	}
	server := regexp.MustCompile(`example MCP server  http://(127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(got)
	if server == nil {
		t.Fatal("output does not name the example server")
	}
	if conn, err := net.Dial("tcp", server[1]); err == nil {
		conn.Close()
		t.Errorf("the example server still accepts connections on %s after run", server[1])
	}
	pids := regexp.MustCompile(`aws-lambda-rie pid (\d+)`).FindAllStringSubmatch(got, -1)
	if len(pids) != 2 {
		t.Fatalf("output names %d RIE pids, want 2", len(pids))
	}
	for _, m := range pids {
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("RIE pid %d still exists after run (kill 0: %v)", pid, err)
		}
	}
}

// TestStoreFallsBackToTheDirectoryWithoutMoto: on a machine without moto
// (here: no python on PATH) the run uses the embedded directory store.
func TestStoreFallsBackToTheDirectoryWithoutMoto(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var progress bytes.Buffer
	s := &stack{dir: t.TempDir()}
	t.Cleanup(func() { s.close() })
	env, err := s.startStore(t.Context(), stackConfig{store: "auto", progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if s.moto != nil || !strings.Contains(s.storeDesc, "embedded directory store") {
		t.Errorf("store %q, want the directory store", s.storeDesc)
	}
	if !strings.Contains(progress.String(), "moto is not available") {
		t.Errorf("no note about moto in %q", &progress)
	}
	if !slices.Contains(env, "AWS_ENDPOINT_URL="+unreachable) {
		t.Errorf("environment %q does not keep AWS requests on loopback", env)
	}
	if _, err := s.startStore(t.Context(), stackConfig{store: "moto", progress: &progress}); err == nil {
		t.Error("-store moto without moto succeeded")
	}
}

// TestRunShowsASweep is `make run` over moto: discover the example
// server, then the sample sweep finds the catalog (made due by localrun)
// and enqueues one discover request for it.
func TestRunShowsASweep(t *testing.T) {
	var out, logs bytes.Buffer
	o := options{
		events:  []string{"../../events/discover-direct.json", "../../events/discover-sweep.json"},
		timeout: 30 * time.Second,
		store:   "moto",
	}
	if err := run(t.Context(), o, &out, &logs); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, &out)
	}
	got := out.String()
	for _, want := range []string{
		`localrun makes catalog "example" due now`,
		"swept: 1 due, 1 enqueued, 0 backing off",
		`discover queue: a re-discovery of catalog "example" (its sealed server URL, vaults [])`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "/mcp)") {
		t.Errorf("the output names the server's path:\n%s", got)
	}
}

// TestRunShowsAnOAuthRefresh is the OAuth part of `make run` over moto:
// the vault's expired access token is refreshed at the loopback
// authorization server before discovery, the rotated refresh token is
// stored, and the call that follows uses the new token with no token
// request. No token appears in the output.
func TestRunShowsAnOAuthRefresh(t *testing.T) {
	var out, logs bytes.Buffer
	o := options{
		events:  []string{"../../events/discover-oauth.json", "../../events/call-oauth.json"},
		timeout: 30 * time.Second,
		store:   "moto",
	}
	if err := run(t.Context(), o, &out, &logs); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, &out)
	}
	got := out.String()
	for _, want := range []string{
		"(the example server; it requires a bearer token)",
		"vault example-oauth secret mcpfn/vaults/example-oauth in moto",
		`discovered 3 tools (0 refused) into catalog "example-oauth"`,
		"log: work item credential vault:example-oauth (mcp_oauth)",
		"log: oauth token refreshed, vault example-oauth, rotated true",
		"vault example-oauth: the access token had expired, so it was refreshed first (1 token request);",
		"and a rotated refresh token",
		`tool_result for "toolu_01OAuthWordStats000000000", is_error: false`,
		"vault example-oauth: the access token is still fresh",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, token := range []string{"at-", "rt-"} { // oauthtest's token prefixes
		if strings.Contains(got, token) {
			t.Errorf("the output carries a token (%q):\n%s", token, got)
		}
	}
}
