package wire

import (
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
)

func TestCheckServerURL(t *testing.T) {
	allowLoopback, err := guard.NewPolicy("127.0.0.1/32:8080")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		raw    string
		policy *guard.Policy
		want   ErrorType // "" means accepted
	}{
		{name: "https name", raw: "https://mcp.example.com/mcp"},
		{name: "https name with port and query", raw: "https://mcp.example.com:8443/mcp?x=1"},
		{name: "userinfo", raw: "https://user:pw@mcp.example.com/mcp", want: InvalidRequest},
		{name: "no scheme", raw: "mcp.example.com/mcp", want: InvalidRequest},
		{name: "ftp", raw: "ftp://mcp.example.com/", want: InvalidRequest},
		{name: "no host", raw: "https:///mcp", want: InvalidRequest},
		{name: "port zero", raw: "https://mcp.example.com:0/mcp", want: InvalidRequest},
		{name: "not a URL", raw: "://", want: InvalidRequest},
		{name: "loopback literal", raw: "https://127.0.0.1/mcp", want: EgressDenied},
		{name: "metadata literal", raw: "http://169.254.169.254/latest", want: EgressDenied},
		{name: "plain http without an allow entry", raw: "http://mcp.example.com/mcp", want: EgressDenied},
		{name: "allowed loopback port", raw: "http://127.0.0.1:8080/mcp", policy: allowLoopback},
		{name: "loopback, another port", raw: "http://127.0.0.1:8081/mcp", policy: allowLoopback, want: EgressDenied},
		{name: "plain http with an allow entry", raw: "http://mcp.example.com/mcp", policy: allowLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CheckServerURL(tt.raw, tt.policy)
			if got := TypeOf(err); got != tt.want {
				t.Fatalf("CheckServerURL(%q) error = %v, want type %q", tt.raw, err, tt.want)
			}
			if err == nil && u.String() != tt.raw {
				t.Errorf("URL = %s, want %s", u, tt.raw)
			}
		})
	}
}

// TestCheckServerURLShowsOnlyTheOrigin: a refused server URL leaves the
// error, message and cause alike, as its origin at most.
func TestCheckServerURLShowsOnlyTheOrigin(t *testing.T) {
	const canary = "sk-CANARY-5e1d"
	for _, raw := range []string{
		"https:///" + canary + "/mcp",
		"https://:443/" + canary,
		"https:" + canary,
		"mcp.example.com/" + canary,
		"http://mcp.example.com/" + canary,
		"https://u@mcp.example.com/" + canary,
		"https://mcp.example.com:0/" + canary,
		"https://127.0.0.1/" + canary,
		"https://mcp.example.com/" + canary + "/%zz",
	} {
		_, err := CheckServerURL(raw, nil)
		if err == nil {
			t.Fatalf("CheckServerURL(%q) accepted", raw)
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("CheckServerURL(%q) = %q, shows the path", raw, err)
		}
	}
}
