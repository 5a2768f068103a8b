package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/awstest"
	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/catalog/catalogtest"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

// setAWSEnv gives the command moto's credentials and region (none when
// region is ""), and no configuration files. It sets the environment, so
// its callers do not run in parallel.
func setAWSEnv(t *testing.T, region string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_REGION": region, "AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": awstest.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": awstest.SecretAccessKey, "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_PROFILE": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// TestStoreErrors: a store that cannot be read is one line on stderr and
// exit 3, for each command that reads a table, within --timeout.
func TestStoreErrors(t *testing.T) {
	m := awstest.SharedMoto(t)
	_, table := catalogtest.NewTable(t, m)
	tests := []struct {
		name   string
		region string
		args   []string // before the ID for get
		stderr string
		within time.Duration
	}{
		{"missing table", awstest.Region, []string{"--table", "absent", "--endpoint", m.Endpoint()},
			`table "absent" not found in DynamoDB at ` + m.Endpoint() + " (region " + awstest.Region + ")", 0},
		{"missing region", "", []string{"--table", table, "--endpoint", m.Endpoint()},
			"no AWS region: set AWS_REGION (or a region in the AWS profile)", 0},
		// The default --timeout bounds a refused connection (port 1) with
		// every retry; the margin is for a busy machine.
		{"unreachable endpoint", awstest.Region, []string{"--table", table, "--endpoint", "http://127.0.0.1:1"},
			"cannot reach DynamoDB at http://127.0.0.1:1 (region " + awstest.Region + "): dial tcp 127.0.0.1:1: connect: connection refused",
			defaultTimeout + 10*time.Second},
	}
	silent := silentServer(t)
	tests = append(tests, struct {
		name   string
		region string
		args   []string
		stderr string
		within time.Duration
	}{"endpoint that never answers", awstest.Region, []string{"--table", table, "--endpoint", silent, "--timeout", "1s"},
		"no answer from DynamoDB at " + silent + " (region " + awstest.Region + ") within 1s (--timeout): ", 10 * time.Second})
	for _, tt := range tests {
		setAWSEnv(t, tt.region)
		for _, sub := range []string{"get", "list"} {
			t.Run(tt.name+"/"+sub, func(t *testing.T) {
				args := append([]string{sub}, tt.args...)
				if sub == "get" {
					args = append(args, "main")
				}
				start := time.Now()
				code, stdout, stderr := cmd(t, nil, args...)
				took := time.Since(start)
				want := "mcpfn-catalog: " + sub + ": " + tt.stderr + "\n"
				ok := stderr == want
				if strings.HasSuffix(tt.stderr, ": ") { // then a cause that varies, on the same line
					ok = strings.HasPrefix(stderr, strings.TrimSuffix(want, "\n")) && strings.Count(stderr, "\n") == 1 && strings.HasSuffix(stderr, "\n")
				}
				if code != exitStore || !ok || stdout != "" {
					t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q", code, stdout, stderr, exitStore, want)
				}
				if tt.within > 0 && took > tt.within {
					t.Errorf("took %s, want within %s", took, tt.within)
				}
			})
		}
	}
}

// silentServer is the URL of a loopback listener that accepts
// connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestHelp: -h prints the command's usage with the exit statuses to
// stdout, nothing to stderr, and exits 0, for every command.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"list", "-h"}, {"get", "-h"}, {"tools", "--help"}, {"changes", "-h"}} {
		code, stdout, stderr := cmd(t, nil, args...)
		if code != exitOK || stderr != "" || !strings.HasPrefix(stdout, "Usage:\n") || !strings.Contains(stdout, "\nExit status:\n  0 ") {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want 0, nothing, the usage with exit statuses", args, code, stderr, stdout)
		}
		if len(args) == 2 && !strings.Contains(stdout, "  mcpfn-catalog "+args[0]+" [store flags]") {
			t.Errorf("%q: stdout %q, want the command's synopsis", args, stdout)
		}
	}
}

// TestListTable lists a table's catalogs with their schedules, and get
// prints a scheduled catalog's schedule, from moto through the command.
func TestListTable(t *testing.T) {
	m := awstest.SharedMoto(t)
	client, table := catalogtest.NewTable(t, m)
	s := catalog.NewDynamo(client, table)
	ctx := t.Context()
	day := 24 * time.Hour
	d := catalogtest.Discover(listing(), 0)
	d.Schedule = &catalog.Schedule{ServerURL: "https://mcp.example.com/private/path?token=x", Interval: &day}
	catalogtest.MustPut(t, s, "scheduled", d)
	failure := catalog.Failure{ErrorType: "mcp_connection_failed_error", Message: "dial: refused", At: catalogtest.T0.Add(time.Hour)}
	for _, id := range []string{"scheduled", "failed"} {
		if err := s.RecordFailure(ctx, id, failure); err != nil {
			t.Fatal(err)
		}
	}
	now := catalogtest.T0.Add(2 * time.Hour)
	b, err := schedule.New(client, table, schedule.Options{Now: func() time.Time { return now }}).RecordFailure(ctx, "scheduled")
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.MustPut(t, s, "plain", catalogtest.Discover(listing(), 0))
	setAWSEnv(t, awstest.Region)
	store := []string{"--table", table, "--endpoint", m.Endpoint()}

	out := mustRun(t, append([]string{"list"}, store...)...)
	if strings.Contains(string(out), "example.com") {
		t.Errorf("list printed the server URL or its origin: %s", out)
	}
	var got []map[string]any
	decode(t, out, &got)
	version := catalogtest.MustGet(t, s, "scheduled").Version
	lastFailure := map[string]any{"error_type": "mcp_connection_failed_error", "message": "dial: refused", "at": "2026-11-29T13:00:00Z"}
	sched := map[string]any{
		"refresh_interval_seconds": 86400.0, "next_due": "2026-11-30T12:00:00Z",
		"failures": 1.0, "retry_after": b.RetryAfter.UTC().Format(time.RFC3339),
	}
	want := []map[string]any{
		{"id": "failed", "tool_count": 0.0, "last_failure": lastFailure},
		{"id": "plain", "version": catalogtest.MustGet(t, s, "plain").Version, "tool_count": 6.0,
			"discovered_at": "2026-11-29T12:00:00Z", "checked_at": "2026-11-29T12:00:00Z"},
		{"id": "scheduled", "version": version, "tool_count": 6.0, "discovered_at": "2026-11-29T12:00:00Z",
			"checked_at": "2026-11-29T12:00:00Z", "last_failure": lastFailure, "schedule": sched},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	out = mustRun(t, append(append([]string{"get"}, store...), "scheduled")...)
	var g struct {
		ID       string         `json:"id"`
		Schedule map[string]any `json:"schedule"`
	}
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sched, g.Schedule); g.ID != "scheduled" || diff != "" {
		t.Errorf("get scheduled: id %q, schedule (-want +got):\n%s", g.ID, diff)
	}
	if strings.Contains(string(out), "/private/path") || strings.Contains(string(out), "token=x") {
		t.Errorf("get printed the server URL's path or query: %s", out)
	}
}
