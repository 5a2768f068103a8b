package guard_test

import (
	"net/netip"
	"strconv"
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

// fuzzEntry builds an allow entry from fuzz input: a prefix of bits (mod
// the address length) over the address in b, with port unless it is 0. ok
// is false when b holds no address.
func fuzzEntry(b []byte, bits uint8, port uint16) (entry string, ok bool) {
	var a netip.Addr
	switch {
	case len(b) >= 16:
		a = netip.AddrFrom16([16]byte(b[:16]))
	case len(b) >= 4:
		a = netip.AddrFrom4([4]byte(b[:4]))
	default:
		return "", false
	}
	pfx := netip.PrefixFrom(a, int(bits)%(a.BitLen()+1)).Masked()
	switch {
	case port == 0:
		return pfx.String(), true
	case a.Is6():
		return "[" + pfx.String() + "]:" + strconv.Itoa(int(port)), true
	default:
		return pfx.String() + ":" + strconv.Itoa(int(port)), true
	}
}

// FuzzGuard checks, for any address and port: the verdict on an IPv4
// address equals the verdict on its IPv4-mapped form, with and without
// allow entries; without allow entries no loopback, private, link-local or
// metadata address is allowed; with them, nothing outside them is newly
// allowed. For any allow list (a fuzzed entry, alone and beside 0.0.0.0/0
// and ::/0): 0.0.0.0:P and [::]:P are never allowed, and no loopback address
// on the Runtime API port is.
func FuzzGuard(f *testing.F) {
	entries := []struct {
		addr string
		bits uint8
		port uint16
	}{
		{"0.0.0.0", 0, 0}, {"0.0.0.0", 32, 9001}, {"::", 0, 0}, {"::", 128, 0},
		{"127.0.0.0", 8, 9001}, {"127.0.0.2", 32, 0}, {"::1", 128, 9001},
		{"::ffff:0.0.0.0", 97, 0}, {"::ffff:127.0.0.1", 128, 9001}, {"64:ff9b::", 120, 0},
		{"10.0.0.0", 8, 8080},
	}
	for i, s := range []string{
		"127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
		"100.100.100.200", "169.254.169.254", "169.254.170.2", "0.0.0.0",
		"255.255.255.255", "224.0.0.1", "8.8.8.8", "1.1.1.1", "127.0.0.2",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1",
		"::ffff:0.0.0.0", "64:ff9b::", "127.255.255.255",
		"64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::1", "fe80::1",
		"fec0::1", "fd00:ec2::254", "fc00::1", "ff02::1", "2001:db8::1",
		"2001::1", "2002:7f00:1::", "2606:4700:4700::1111", "3fff::1",
	} {
		b := netip.MustParseAddr(s).AsSlice()
		e := entries[i%len(entries)]
		for _, port := range []uint16{443, 8080, 9001} {
			f.Add(b, port, netip.MustParseAddr(e.addr).AsSlice(), e.bits, e.port)
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
	const runtimePort = 9001

	f.Fuzz(func(t *testing.T, b []byte, port uint16, eb []byte, bits uint8, eport uint16) {
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

		policies := []*guard.Policy{nil, allow}
		if entry, ok := fuzzEntry(eb, bits, eport); ok {
			for _, list := range [][]string{{entry}, {entry, "0.0.0.0/0", "::/0"}} {
				if p, err := guard.NewPolicy(list...); err == nil {
					policies = append(policies, p)
				}
			}
		}

		if v4 := a.Unmap(); v4.Is4() {
			mapped := netip.AddrFrom16(v4.As16())
			for _, p := range policies {
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

		// A loopback address built from the fuzzed bytes, in 127/8.
		lo := netip.AddrFrom4([4]byte{127, b[1], b[2], b[3]})
		for _, p := range policies {
			for _, u := range []netip.AddrPort{
				netip.AddrPortFrom(netip.IPv4Unspecified(), port),
				netip.AddrPortFrom(netip.IPv6Unspecified(), port),
				netip.AddrPortFrom(netip.AddrFrom16(netip.IPv4Unspecified().As16()), port),
			} {
				if p.Check(network(u.Addr()), u) == nil {
					t.Fatalf("policy %q allows the unspecified %v", p, u)
				}
			}
			for _, r := range []netip.AddrPort{
				netip.AddrPortFrom(lo, runtimePort),
				netip.AddrPortFrom(netip.IPv6Loopback(), runtimePort),
			} {
				if p.Check(network(r.Addr()), r) == nil {
					t.Fatalf("policy %q allows %v on the Runtime API port", p, r)
				}
			}
			if p.Check(network(a), ap) == nil && port == runtimePort && (e.IsLoopback() || e.IsUnspecified()) {
				t.Fatalf("policy %q allows %v (judged as %v) on the Runtime API port", p, ap, e)
			}
		}
	})
}
