package guard_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
)

// verdict renders Check's result as "allowed" or the refusal's reason word.
func verdict(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return "allowed"
	}
	var de *guard.DeniedError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *DeniedError", err)
	}
	if !errors.Is(err, guard.ErrDenied) {
		t.Fatalf("error %v does not wrap ErrDenied", err)
	}
	return de.Reason.String()
}

func network(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "tcp4"
	}
	return "tcp6"
}

func check(t *testing.T, p *guard.Policy, addrPort string) string {
	t.Helper()
	ap := netip.MustParseAddrPort(addrPort)
	return verdict(t, p.Check(network(ap.Addr()), ap))
}

func TestCheckDefaultDenySet(t *testing.T) {
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "")
	tests := []struct {
		addr string
		want string
	}{
		// 0.0.0.0/8
		{"0.0.0.0", "unspecified"},
		{"0.255.255.255", "unspecified"},
		{"1.0.0.0", "allowed"}, // just outside 0/8
		// 10/8
		{"9.255.255.255", "allowed"}, // just outside
		{"10.0.0.0", "private"},
		{"10.255.255.255", "private"},
		{"11.0.0.0", "allowed"}, // just outside
		// 100.64/10
		{"100.63.255.255", "allowed"}, // just outside CGNAT
		{"100.64.0.0", "cgnat"},
		{"100.100.100.199", "cgnat"},
		{"100.100.100.200", "metadata"}, // Alibaba Cloud metadata, inside CGNAT
		{"100.127.255.255", "cgnat"},
		{"100.128.0.0", "allowed"}, // just outside CGNAT
		// 127/8
		{"126.255.255.255", "allowed"},
		{"127.0.0.0", "loopback"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.255", "loopback"},
		{"128.0.0.0", "allowed"},
		// 169.254/16
		{"169.253.255.255", "allowed"},
		{"169.254.0.0", "link-local"},
		{"169.254.169.253", "link-local"},
		{"169.254.169.254", "metadata"}, // EC2 IMDS
		{"169.254.170.2", "metadata"},   // ECS credentials
		{"169.254.170.23", "metadata"},  // EKS Pod Identity
		{"169.254.255.255", "link-local"},
		{"169.255.0.0", "allowed"},
		// 172.16/12
		{"172.15.255.255", "allowed"},
		{"172.16.0.0", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.0", "allowed"},
		// 192.0.0/24
		{"191.255.255.255", "allowed"},
		{"192.0.0.0", "ietf-protocol"},
		{"192.0.0.255", "ietf-protocol"},
		{"192.0.1.0", "allowed"},
		// 192.0.2/24
		{"192.0.2.0", "documentation"},
		{"192.0.2.255", "documentation"},
		{"192.0.3.0", "allowed"},
		// 192.88.99/24
		{"192.88.98.255", "allowed"},
		{"192.88.99.0", "6to4"},
		{"192.88.99.255", "6to4"},
		{"192.88.100.0", "allowed"},
		// 192.168/16
		{"192.167.255.255", "allowed"},
		{"192.168.0.0", "private"},
		{"192.168.255.255", "private"},
		{"192.169.0.0", "allowed"},
		// 198.18/15
		{"198.17.255.255", "allowed"},
		{"198.18.0.0", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.20.0.0", "allowed"},
		// 198.51.100/24
		{"198.51.99.255", "allowed"},
		{"198.51.100.0", "documentation"},
		{"198.51.100.255", "documentation"},
		{"198.51.101.0", "allowed"},
		// 203.0.113/24
		{"203.0.112.255", "allowed"},
		{"203.0.113.0", "documentation"},
		{"203.0.113.255", "documentation"},
		{"203.0.114.0", "allowed"},
		// 224/4, 240/4, broadcast
		{"223.255.255.255", "allowed"},
		{"224.0.0.0", "multicast"},
		{"239.255.255.255", "multicast"},
		{"240.0.0.0", "reserved"},
		{"255.255.255.254", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"8.8.8.8", "allowed"},

		// IPv4-mapped: the embedded IPv4 is judged.
		{"::ffff:0.0.0.0", "unspecified"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "metadata"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:100.63.255.255", "allowed"},
		{"::ffff:8.8.8.8", "allowed"},
		// NAT64 64:ff9b::/96: the embedded IPv4 is judged.
		{"64:ff9b::", "unspecified"}, // first: 0.0.0.0
		{"64:ff9b::8.8.8.8", "allowed"},
		{"64:ff9b::127.0.0.1", "loopback"},
		{"64:ff9b::10.0.0.1", "private"},
		{"64:ff9b::169.254.169.254", "metadata"},
		{"64:ff9b::100.100.100.200", "metadata"},
		{"64:ff9b::ffff:ffff", "broadcast"},      // last: 255.255.255.255
		{"64:ff9b::1:0:0", "not-global-unicast"}, // just outside the /96
		{"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "not-global-unicast"},
		// 64:ff9b:1::/48
		{"64:ff9b:1::", "nat64-local"},
		{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "nat64-local"},
		{"64:ff9b:2::", "not-global-unicast"}, // just outside
		// ::, ::1, ::/96 IPv4-compatible
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::2", "ipv4-compatible"},
		{"::127.0.0.1", "ipv4-compatible"},
		{"::8.8.8.8", "ipv4-compatible"},
		{"::255.255.255.255", "ipv4-compatible"}, // last of ::/96
		{"::1:0:0", "not-global-unicast"},        // just outside ::/96
		// fe80::/10
		{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "not-global-unicast"}, // just outside
		{"fe80::", "link-local"},
		{"fe80::1", "link-local"},
		{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
		// fec0::/10
		{"fec0::", "site-local"},
		{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local"},
		// fc00::/7
		{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "not-global-unicast"}, // just outside
		{"fc00::", "unique-local"},
		{"fd00:ec2::253", "unique-local"},
		{"fd00:ec2::254", "metadata"}, // EC2 IMDS over IPv6
		{"fd00:ec2::23", "metadata"},  // EKS Pod Identity over IPv6
		{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local"},
		// ff00::/8
		{"ff00::", "multicast"},
		{"ff02::1", "multicast"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
		// 2000::/3 and the denied ranges inside it
		{"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "not-global-unicast"}, // just below 2000::/3
		{"2000::", "allowed"},
		{"2001::", "teredo"},
		{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "teredo"},
		{"2001:1::", "ietf-protocol"},
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "ietf-protocol"}, // last of 2001::/23
		{"2001:200::", "allowed"},                                   // just outside 2001::/23
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "allowed"},
		{"2001:db8::", "documentation"},
		{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
		{"2001:db9::", "allowed"},
		{"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "allowed"},
		{"2002::", "6to4"},
		{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "6to4"},
		{"2003::", "allowed"},
		{"2606:4700:4700::1111", "allowed"},
		{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "allowed"},
		{"3fff::", "documentation"},
		{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
		{"3fff:1000::", "allowed"},
		{"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "allowed"}, // last of 2000::/3
		{"4000::", "not-global-unicast"},                       // just above 2000::/3
		{"100::", "not-global-unicast"},                        // discard-only
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			for _, p := range []*guard.Policy{nil, {}} {
				got := verdict(t, p.Check(network(a), netip.AddrPortFrom(a, 443)))
				if got != tt.want {
					t.Errorf("Check(%s) = %s, want %s", tt.addr, got, tt.want)
				}
			}
		})
	}
}

func TestCheckRefusesZonesNetworksAndInvalid(t *testing.T) {
	tests := []struct {
		name    string
		network string
		addr    netip.AddrPort
		want    string
	}{
		{"zoned link-local", "tcp6", netip.MustParseAddrPort("[fe80::1%eth0]:443"), "zoned"},
		{"zoned global", "tcp6", netip.MustParseAddrPort("[2606:4700::1%eth0]:443"), "zoned"},
		{"invalid address", "tcp4", netip.AddrPort{}, "unparsable"},
		{"tcp without family", "tcp", netip.MustParseAddrPort("8.8.8.8:443"), "network"},
		{"udp", "udp4", netip.MustParseAddrPort("8.8.8.8:53"), "network"},
		{"unix", "unix", netip.MustParseAddrPort("8.8.8.8:443"), "network"},
		{"empty network", "", netip.MustParseAddrPort("8.8.8.8:443"), "network"},
	}
	allowAll, err := guard.NewPolicy("0.0.0.0/0", "::/0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range []*guard.Policy{nil, allowAll} {
				if got := verdict(t, p.Check(tt.network, tt.addr)); got != tt.want {
					t.Errorf("Check(%q, %v) = %s, want %s (policy %q)", tt.network, tt.addr, got, tt.want, p)
				}
			}
		})
	}
}

func TestNewPolicyBadRuntimeAPI(t *testing.T) {
	for _, v := range []string{"127.0.0.1", "runtime.internal:9001", "127.0.0.1:http", "[fe80::1%eth0]:9001"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_RUNTIME_API", v)
			if _, err := guard.NewPolicy("10.0.0.0/8"); err == nil || !strings.Contains(err.Error(), "AWS_LAMBDA_RUNTIME_API") {
				t.Errorf("NewPolicy error = %v, want one naming AWS_LAMBDA_RUNTIME_API", err)
			}
		})
	}
}

func TestDefaultPolicy(t *testing.T) {
	t.Cleanup(func() { guard.SetDefault(nil) })
	if guard.Default().HasAllow() {
		t.Fatal("Default() has allow entries before SetDefault")
	}
	p, err := guard.NewPolicy("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	guard.SetDefault(p)
	if got := guard.Default(); got != p {
		t.Errorf("Default() = %v, want the policy set", got)
	}
	guard.SetDefault(nil)
	if got := check(t, guard.Default(), "127.0.0.1:80"); got != "loopback" {
		t.Errorf("after SetDefault(nil): %s, want loopback", got)
	}
}

func TestDeniedErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *guard.DeniedError
		want string
	}{
		{
			name: "literal",
			err:  &guard.DeniedError{Network: "tcp4", Addr: "127.0.0.1", Port: 443, Reason: guard.ReasonLoopback},
			want: "guard: egress denied: 127.0.0.1:443 (loopback)",
		},
		{
			name: "resolved name",
			err:  &guard.DeniedError{Network: "tcp6", Host: "mcp.example.com", Addr: "fd00:ec2::254", Port: 80, Reason: guard.ReasonMetadata},
			want: "guard: egress denied: mcp.example.com resolves to [fd00:ec2::254]:80 (metadata)",
		},
		{
			name: "network",
			err:  &guard.DeniedError{Network: "udp", Addr: "8.8.8.8", Port: 53, Reason: guard.ReasonNetwork},
			want: `guard: egress denied: network "udp" for 8.8.8.8:53 (network)`,
		},
		{
			name: "unparsable",
			err:  &guard.DeniedError{Network: "tcp", Addr: "mcp:https", Reason: guard.ReasonUnparsable},
			want: "guard: egress denied: mcp:https (unparsable)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReasonWords(t *testing.T) {
	seen := map[string]guard.Reason{}
	for r := guard.ReasonUnknown; r <= guard.ReasonRuntimeAPI; r++ {
		w := r.String()
		if w == "" || strings.HasPrefix(w, "reason(") || strings.ContainsAny(w, " _") {
			t.Errorf("Reason(%d) prints %q, want a lowercase word", r, w)
		}
		if prev, dup := seen[w]; dup {
			t.Errorf("Reason(%d) and Reason(%d) both print %q", prev, r, w)
		}
		seen[w] = r
		if b, _ := r.MarshalText(); string(b) != w {
			t.Errorf("MarshalText(%d) = %q, want %q", r, b, w)
		}
	}
	if got := guard.Reason(250).String(); got != "reason(250)" {
		t.Errorf("undefined reason prints %q", got)
	}
}
