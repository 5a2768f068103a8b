package guard_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfn/mcpfn/shared/guard"
)

func TestCheckAllowEntries(t *testing.T) {
	tests := []struct {
		name       string
		runtimeAPI string
		allow      []string
		checks     map[string]string // addr:port -> verdict
	}{
		{
			name:  "loopback with port",
			allow: []string{"127.0.0.1/32:8080"},
			checks: map[string]string{
				"127.0.0.1:8080":          "allowed",
				"[::ffff:127.0.0.1]:8080": "allowed", // mapped form of the same address
				"127.0.0.1:8081":          "loopback",
				"127.0.0.2:8080":          "loopback",
				"[::1]:8080":              "loopback",
			},
		},
		{
			name:  "IPv6 with and without port",
			allow: []string{"[::1/128]:8080", "fd00::/8"},
			checks: map[string]string{
				"[::1]:8080":           "allowed",
				"[::1]:8081":           "loopback",
				"[fd12::1]:1":          "allowed",
				"[fd00:ec2::254]:80":   "allowed", // an explicit entry is the operator's decision
				"[fc00::1]:80":         "unique-local",
				"[::ffff:10.0.0.1]:80": "private",
			},
		},
		{
			name:  "private VPC range",
			allow: []string{"10.20.0.0/16"},
			checks: map[string]string{
				"10.20.0.0:443":            "allowed",
				"10.20.255.255:443":        "allowed",
				"10.21.0.0:443":            "private",
				"[64:ff9b::10.20.1.1]:443": "allowed", // NAT64 judged by its IPv4
				"8.8.8.8:443":              "allowed",
			},
		},
		{
			name:  "runtime API default never opened",
			allow: []string{"127.0.0.0/8", "0.0.0.0/0", "::/0", "[::1/128]:9001"},
			checks: map[string]string{
				"127.0.0.1:9001":          "runtime-api",
				"[::ffff:127.0.0.1]:9001": "runtime-api",
				"[64:ff9b::7f00:1]:9001":  "runtime-api",
				"127.0.0.0:9001":          "runtime-api", // first of 127/8
				"127.0.0.2:9001":          "runtime-api", // reaches a listener on 0.0.0.0
				"127.255.255.255:9001":    "runtime-api", // last of 127/8
				"[::1]:9001":              "runtime-api",
				"0.0.0.0:9001":            "runtime-api", // connect lands on 127.0.0.1
				"[::]:9001":               "runtime-api", // connect lands on ::1
				"[::ffff:0.0.0.0]:9001":   "runtime-api",
				"126.255.255.255:9001":    "allowed", // just outside 127/8
				"128.0.0.0:9001":          "allowed", // just outside 127/8
				"0.0.0.1:9001":            "allowed", // in 0/8, not unspecified
				"[::2]:9001":              "allowed",
				"127.0.0.1:9002":          "allowed",
				"127.0.0.2:9000":          "allowed",
				"[::1]:9002":              "allowed",
			},
		},
		{
			name:  "unspecified never opened",
			allow: []string{"0.0.0.0/0", "::/0", "0.0.0.0/32", "[::/128]:8080"},
			checks: map[string]string{
				"0.0.0.0:8080":              "unspecified",
				"0.0.0.0:443":               "unspecified",
				"[::]:8080":                 "unspecified",
				"[::]:443":                  "unspecified",
				"[::ffff:0.0.0.0]:8080":     "unspecified",
				"[64:ff9b::]:8080":          "unspecified", // NAT64 form of 0.0.0.0
				"0.0.0.1:8080":              "allowed",     // just above 0.0.0.0
				"[::1]:8080":                "allowed",     // just above ::
				"[::ffff:127.0.0.1]:8080":   "allowed",
				"255.255.255.255:8080":      "allowed",
				"[2606:4700:4700::1]:8080":  "allowed",
				"[64:ff9b::8.8.8.8]:8080":   "allowed",
				"[64:ff9b::127.0.0.1]:9001": "runtime-api",
			},
		},
		{
			name:       "runtime API from environment",
			runtimeAPI: "169.254.100.1:9001",
			allow:      []string{"169.254.0.0/16", "127.0.0.0/8", "::1/128", "0.0.0.0/0"},
			checks: map[string]string{
				"169.254.100.1:9001":            "runtime-api",
				"[::ffff:169.254.100.1]:9001":   "runtime-api",
				"169.254.100.1:9002":            "allowed",
				"169.254.100.2:9001":            "allowed",
				"127.0.0.1:9001":                "runtime-api", // loopback on the Runtime API port
				"127.0.0.2:9001":                "runtime-api",
				"[::1]:9001":                    "runtime-api",
				"0.0.0.0:9001":                  "runtime-api",
				"[::]:9001":                     "runtime-api",
				"127.0.0.1:9002":                "allowed",
				"0.0.0.0:9002":                  "unspecified",
				"[64:ff9b::169.254.100.1]:9001": "runtime-api",
			},
		},
		{
			name:       "runtime API as IPv6 loopback",
			runtimeAPI: "[::1]:9009",
			allow:      []string{"127.0.0.0/8", "::1/128"},
			checks: map[string]string{
				"[::1]:9009":     "runtime-api",
				"127.0.0.1:9009": "runtime-api",
				"127.1.2.3:9009": "runtime-api",
				"[::]:9009":      "runtime-api",
				"127.0.0.1:9001": "allowed", // not the Runtime API port in this environment
				"[::1]:9001":     "allowed",
			},
		},
		{
			name:       "runtime API as localhost",
			runtimeAPI: "localhost:9009",
			allow:      []string{"127.0.0.0/8", "::1/128"},
			checks: map[string]string{
				"127.0.0.1:9009":          "runtime-api",
				"127.0.0.53:9009":         "runtime-api",
				"[::1]:9009":              "runtime-api",
				"[::ffff:127.0.0.1]:9009": "runtime-api",
				"0.0.0.0:9009":            "runtime-api",
				"[::]:9009":               "runtime-api",
				"127.0.0.1:9001":          "allowed",
			},
		},
		{
			name:  "4in6 entry normalised to IPv4",
			allow: []string{"::ffff:10.0.0.0/104"},
			checks: map[string]string{
				"10.1.2.3:443":          "allowed",
				"[::ffff:10.1.2.3]:443": "allowed",
				"192.168.0.1:443":       "private",
				"127.0.0.1:443":         "loopback",
			},
		},
		{
			name:  "NAT64 entry normalised to IPv4",
			allow: []string{"64:ff9b::a00:0/104"},
			checks: map[string]string{
				"10.1.2.3:443":              "allowed",
				"[64:ff9b::10.1.2.3]:443":   "allowed",
				"[64:ff9b::192.168.0.1]:80": "private",
			},
		},
		{
			name:  "IPv6 prefixes never admit IPv4",
			allow: []string{"::/0", "::/80"}, // both contain ::ffff:0:0/96
			checks: map[string]string{
				"[::1]:443":              "allowed",
				"127.0.0.1:443":          "loopback",
				"[::ffff:127.0.0.1]:443": "loopback",
				"[::ffff:10.0.0.1]:443":  "private",
				"[64:ff9b::a00:1]:443":   "private",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_RUNTIME_API", tt.runtimeAPI)
			p, err := guard.NewPolicy(tt.allow...)
			if err != nil {
				t.Fatal(err)
			}
			if !p.HasAllow() {
				t.Error("HasAllow() = false")
			}
			got := map[string]string{}
			for ap := range tt.checks {
				got[ap] = check(t, p, ap)
			}
			if diff := cmp.Diff(tt.checks, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPolicyNormalises(t *testing.T) {
	tests := []struct {
		entry string
		want  string
	}{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"127.0.0.1/32:8080", "127.0.0.1/32:8080"},
		{"::1/128", "::1/128"},
		{"[::1/128]:8080", "[::1/128]:8080"},
		{"[::1/128]", "::1/128"},
		{"[10.0.0.0/8]:443", "10.0.0.0/8:443"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"::ffff:127.0.0.1/128", "127.0.0.1/32"},
		{"[::ffff:127.0.0.1/128]:8080", "127.0.0.1/32:8080"},
		{"::ffff:0:0/97", "0.0.0.0/1"},
		{"64:ff9b::7f00:1/128", "127.0.0.1/32"},
		{"::/80", "::/80"}, // wider than ::ffff:0:0/96 but never matches IPv4
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			p, err := guard.NewPolicy(tt.entry)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("NewPolicy(%q) = %q, want %q", tt.entry, got, tt.want)
			}
		})
	}
}

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string // substring of the error; "" means no error
	}{
		{name: "empty", in: "", want: nil},
		{name: "blank", in: " ,\t, \n", want: nil},
		{name: "one", in: "10.0.0.0/8", want: []string{"10.0.0.0/8"}},
		{name: "commas", in: "10.0.0.0/8,127.0.0.1/32:8080", want: []string{"10.0.0.0/8", "127.0.0.1/32:8080"}},
		{
			name: "mixed separators",
			in:   " 10.20.0.0/16, 127.0.0.1/32:8080\n[::1/128]:8080 fd00::/8 ,",
			want: []string{"10.20.0.0/16", "127.0.0.1/32:8080", "[::1/128]:8080", "fd00::/8"},
		},
		{name: "bare address", in: "127.0.0.1", wantErr: "want CIDR prefix"},
		{name: "bare address with port", in: "127.0.0.1:8080", wantErr: "want CIDR prefix"},
		{name: "host bits set", in: "10.0.0.1/8", wantErr: "did you mean 10.0.0.0/8"},
		{name: "port zero", in: "127.0.0.1/32:0", wantErr: "not in 1-65535"},
		{name: "port too large", in: "127.0.0.1/32:65536", wantErr: "not in 1-65535"},
		{name: "port not numeric", in: "127.0.0.1/32:http", wantErr: "not in 1-65535"},
		{name: "IPv6 port without brackets", in: "::1/128:8080", wantErr: "[PREFIX]:PORT"},
		{name: "IPv6 missing bracket", in: "[::1/128:8080", wantErr: "missing ]"},
		{name: "IPv6 junk after bracket", in: "[::1/128]8080", wantErr: "[PREFIX]:PORT"},
		{name: "IPv6 empty port", in: "[::1/128]:", wantErr: "[PREFIX]:PORT"},
		{name: "zone", in: "fe80::%eth0/10", wantErr: "want CIDR prefix"},
		{name: "hostname", in: "mcp.internal/32", wantErr: "want CIDR prefix"},
		{name: "all of 4in6", in: "::ffff:0:0/96", wantErr: "covers every IPv4 address"},
		{name: "all of 4in6 with port", in: "[::ffff:0:0/96]:443", wantErr: "covers every IPv4 address"},
		{name: "all of NAT64", in: "64:ff9b::/96", wantErr: "covers every IPv4 address"},
		{name: "one bad among good", in: "10.0.0.0/8, bogus", wantErr: `"bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := guard.ParseAllowList(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAllowList(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				if _, perr := guard.NewPolicy(strings.Fields(strings.ReplaceAll(tt.in, ",", " "))...); perr == nil {
					t.Errorf("NewPolicy accepts what ParseAllowList refuses: %q", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAllowList(%q) (-want +got):\n%s", tt.in, diff)
			}
			if _, err := guard.NewPolicy(got...); err != nil {
				t.Errorf("NewPolicy(%q): %v", got, err)
			}
		})
	}
}
