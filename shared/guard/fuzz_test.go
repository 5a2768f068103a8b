package guard_test

import (
	"net/netip"
	"testing"

	"github.com/mcpfn/mcpfn/shared/guard"
)

var nat64WKP = netip.MustParsePrefix("64:ff9b::/96")

// embedded returns the IPv4 inside an IPv4-mapped or NAT64 address, else a.
func embedded(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if nat64WKP.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// forbidden is an oracle independent of the guard's tables: the standard
// library's classes plus the metadata endpoints.
func forbidden(a netip.Addr) bool {
	switch a {
	case netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("169.254.170.2"),
		netip.MustParseAddr("100.100.100.200"), netip.MustParseAddr("fd00:ec2::254"):
		return true
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || !a.IsGlobalUnicast()
}

// FuzzGuard checks, for any address and port: the verdict on an IPv4
// address equals the verdict on its IPv4-mapped form, with and without
// allow entries; without allow entries no loopback, private, link-local or
// metadata address is allowed; with them, nothing outside them is newly
// allowed and the Runtime API never is.
func FuzzGuard(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
		"100.100.100.200", "169.254.169.254", "169.254.170.2", "0.0.0.0",
		"255.255.255.255", "224.0.0.1", "8.8.8.8", "1.1.1.1",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::1", "fe80::1",
		"fec0::1", "fd00:ec2::254", "fc00::1", "ff02::1", "2001:db8::1",
		"2001::1", "2002:7f00:1::", "2606:4700:4700::1111", "3fff::1",
	} {
		b := netip.MustParseAddr(s).AsSlice()
		for _, port := range []uint16{443, 8080, 9001} {
			f.Add(b, port)
		}
	}
	f.Setenv("AWS_LAMBDA_RUNTIME_API", "")
	allow, err := guard.NewPolicy("10.0.0.0/8:8080", "127.0.0.1/32", "[fd00::/8]:443", "::ffff:192.168.0.0/112")
	if err != nil {
		f.Fatal(err)
	}
	inAllow := func(e netip.Addr, port uint16) bool {
		return (netip.MustParsePrefix("10.0.0.0/8").Contains(e) && port == 8080) ||
			e == netip.MustParseAddr("127.0.0.1") ||
			(netip.MustParsePrefix("fd00::/8").Contains(e) && port == 443) ||
			netip.MustParsePrefix("192.168.0.0/16").Contains(e)
	}
	runtimeAPI := netip.MustParseAddrPort("127.0.0.1:9001")

	f.Fuzz(func(t *testing.T, b []byte, port uint16) {
		var a netip.Addr
		switch {
		case len(b) >= 16:
			a = netip.AddrFrom16([16]byte(b[:16]))
		case len(b) >= 4:
			a = netip.AddrFrom4([4]byte(b[:4]))
		default:
			return
		}
		ap := netip.AddrPortFrom(a, port)
		e := embedded(a)

		if v4 := a.Unmap(); v4.Is4() {
			mapped := netip.AddrFrom16(v4.As16())
			for _, p := range []*guard.Policy{nil, allow} {
				plain := verdict(t, p.Check("tcp4", netip.AddrPortFrom(v4, port)))
				viaMap := verdict(t, p.Check("tcp6", netip.AddrPortFrom(mapped, port)))
				if plain != viaMap {
					t.Fatalf("policy %q: %v is %s but %v is %s", p, v4, plain, mapped, viaMap)
				}
			}
		}

		def := (*guard.Policy)(nil).Check(network(a), ap)
		if def == nil && forbidden(e) {
			t.Fatalf("%v (judged as %v) allowed without an allow entry", a, e)
		}
		withAllow := allow.Check(network(a), ap)
		if withAllow == nil && def != nil && !inAllow(e, port) {
			t.Fatalf("%v:%d allowed by entries %q that do not cover it", a, port, allow)
		}
		if withAllow == nil && netip.AddrPortFrom(e, port) == runtimeAPI {
			t.Fatalf("%v:%d is the Runtime API but allowed", a, port)
		}
	})
}
