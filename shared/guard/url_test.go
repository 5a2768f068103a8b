package guard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
)

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		allowHTTP bool
		wantErr   string // substring; "" means accepted
	}{
		{name: "https", raw: "https://mcp.example.com/mcp"},
		{name: "https with port and query", raw: "https://mcp.example.com:8443/mcp?x=1"},
		{name: "scheme case folded", raw: "HTTPS://mcp.example.com/mcp"},
		{name: "https IPv6 literal", raw: "https://[2606:4700::1111]/mcp"},
		{name: "http refused without allow", raw: "http://mcp.example.com/mcp", wantErr: "plain http needs an egress allow entry"},
		{name: "http with allow", raw: "http://127.0.0.1:8080/mcp", allowHTTP: true},
		{name: "userinfo user and password", raw: "https://alice:s3cret@mcp.example.com/mcp", wantErr: "userinfo not allowed"},
		{name: "userinfo user only", raw: "https://alice@mcp.example.com/mcp", wantErr: "userinfo not allowed"},
		{name: "userinfo empty", raw: "https://@mcp.example.com/mcp", wantErr: "userinfo not allowed"},
		{name: "no host", raw: "https:///mcp", wantErr: "missing host"},
		{name: "port only", raw: "https://:443/mcp", wantErr: "missing host"},
		{name: "opaque", raw: "https:mcp.example.com", wantErr: "missing host"},
		{name: "no scheme", raw: "mcp.example.com/mcp", wantErr: "missing scheme"},
		{name: "scheme-relative", raw: "//mcp.example.com/mcp", wantErr: "missing scheme"},
		{name: "ftp", raw: "ftp://mcp.example.com/", wantErr: `scheme "ftp" not allowed`},
		{name: "websocket", raw: "wss://mcp.example.com/", wantErr: `scheme "wss" not allowed`},
		{name: "file", raw: "file:///etc/passwd", wantErr: `scheme "file" not allowed`},
		{name: "port zero", raw: "https://mcp.example.com:0/", wantErr: "not in 1-65535"},
		{name: "port too large", raw: "https://mcp.example.com:65536/", wantErr: "not in 1-65535"},
		{name: "unparsable", raw: "https://mcp.example.com/%zz?token=s3cret", wantErr: "invalid URL escape"},
		{name: "control character", raw: "https://mcp.example.com/\x7f", wantErr: "invalid control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := guard.CheckURL(tt.raw, tt.allowHTTP)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v", tt.raw, err)
				}
				if u == nil || u.Hostname() == "" {
					t.Fatalf("CheckURL(%q) returned URL %v", tt.raw, u)
				}
				return
			}
			if !errors.Is(err, guard.ErrBadURL) {
				t.Fatalf("CheckURL(%q) = %v, want ErrBadURL", tt.raw, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CheckURL(%q) = %q, want it to contain %q", tt.raw, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("CheckURL(%q) error leaks a secret: %q", tt.raw, err)
			}
		})
	}
}

func TestCheckURLNeverEchoesSecrets(t *testing.T) {
	for _, raw := range []string{
		"http://alice:s3cret@mcp.example.com/mcp?token=s3cret#s3cret",
		"https://alice:s3cret@mcp.example.com/mcp?token=s3cret",
		"https://:443/mcp?token=s3cret",
		"https://mcp.example.com:0/mcp?token=s3cret",
		"https:///s3cret/mcp",                  // no host: the path is all there is
		"https://:443/s3cret/mcp",              // a port and no host
		"https:s3cret/mcp",                     // opaque
		"mcp.example.com/s3cret",               // no scheme: all of it parses as a path
		"//mcp.example.com/s3cret",             // scheme-relative
		"http://mcp.example.com/s3cret",        // plain http
		"https://alice@mcp.example.com/s3cret", // userinfo, and a key in the path
		"https://mcp.example.com:0/s3cret",     // bad port, and a key in the path
		"https://alice:s3cret/mcp",             // userinfo without @ parses as a port
		"https://mcp.example.com/s3cret/%zz",   // bad escape after the key
	} {
		_, err := guard.CheckURL(raw, false)
		if err == nil {
			t.Fatalf("CheckURL(%q) accepted", raw)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckURL(%q) error leaks a secret: %q", raw, err)
		}
	}
}

func TestPolicyCheckURL(t *testing.T) {
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "")
	local, err := guard.NewPolicy("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		policy  *guard.Policy
		raw     string
		wantErr error
		reason  string // refusal word when wantErr is ErrDenied
	}{
		{name: "public name", raw: "https://mcp.example.com/mcp"},
		{name: "public literal", raw: "https://8.8.8.8/mcp"},
		{name: "loopback literal", raw: "https://127.0.0.1/mcp", wantErr: guard.ErrDenied, reason: "loopback"},
		{name: "mapped metadata literal", raw: "https://[::ffff:169.254.169.254]/latest", wantErr: guard.ErrDenied, reason: "metadata"},
		{name: "zoned literal", raw: "https://[fe80::1%25eth0]/mcp", wantErr: guard.ErrDenied, reason: "zoned"},
		{name: "http without allow", raw: "http://8.8.8.8/mcp", wantErr: guard.ErrBadURL},
		{name: "http with allow", policy: local, raw: "http://127.0.0.1:8080/mcp"},
		{name: "default http port judged", policy: local, raw: "http://127.0.0.1/mcp"},
		{name: "runtime API", policy: local, raw: "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next", wantErr: guard.ErrDenied, reason: "runtime-api"},
		{name: "outside allow", policy: local, raw: "https://10.0.0.1/mcp", wantErr: guard.ErrDenied, reason: "private"},
		{name: "userinfo with allow", policy: local, raw: "http://a:b@127.0.0.1:8080/", wantErr: guard.ErrBadURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := tt.policy.CheckURL(tt.raw)
			if tt.wantErr == nil {
				if err != nil || u == nil {
					t.Fatalf("CheckURL(%q) = %v, %v", tt.raw, u, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tt.raw, err, tt.wantErr)
			}
			if tt.reason != "" {
				if got := verdict(t, err); got != tt.reason {
					t.Errorf("reason %s, want %s", got, tt.reason)
				}
			}
		})
	}
}
