package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageAndExitStatus: -h prints the usage to stdout and exits 0;
// each error is one line on stderr with its exit status, before any
// browser or network.
func TestUsageAndExitStatus(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	noRegion := map[string]string{"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none}
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string // a substring of the one line; "" for none
	}{
		{"help", nil, []string{"-h"}, exitOK, ""},
		{"long help", nil, []string{"--help"}, exitOK, ""},
		{"no server", nil, []string{"-vault", "v"}, exitUsage, "want exactly one SERVER_URL after the flags (mcpfn-auth -h)"},
		{"unknown flag", nil, []string{"-vualt", "v", "https://mcp.example.com/mcp"}, exitUsage, "flag provided but not defined: -vualt"},
		{"bad vault", nil, []string{"-vault", "", "https://mcp.example.com/mcp"}, exitUsage, "-vault:"},
		{"bad port", nil, []string{"-vault", "v", "-port", "70000", "https://mcp.example.com/mcp"}, exitUsage, "-port 70000"},
		{"no region", noRegion, []string{"-vault", "v", "https://mcp.example.com/mcp"}, exitStore, "no AWS region"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"} {
				t.Setenv(k, tt.env[k])
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, &stderr)
			}
			if tt.code == exitOK {
				if stderr.Len() != 0 || !strings.HasPrefix(stdout.String(), "Usage:\n") || !strings.Contains(stdout.String(), "-vault string") ||
					!strings.Contains(stdout.String(), "\nExit status:\n") {
					t.Errorf("stdout %q, stderr %q; want the usage with flags and exit statuses, nothing on stderr", &stdout, &stderr)
				}
				return
			}
			if got := stderr.String(); !strings.HasPrefix(got, "mcpfn-auth: ") || !strings.Contains(got, tt.stderr) || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr %q, want one line with %q", got, tt.stderr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q on failure, want nothing", &stdout)
			}
		})
	}
}
