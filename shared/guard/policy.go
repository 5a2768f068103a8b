package guard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
)

// EnvAllowList names the environment variable holding the allow list
// (see [ParseAllowList]). Only the functions' main.go reads it; this package
// never does.
const EnvAllowList = "MCPFN_EGRESS_ALLOW"

// envRuntimeAPI is set by Lambda to the Runtime API's host:port.
const envRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"

// defaultRuntimeAPI is the Runtime API address when envRuntimeAPI is unset.
var defaultRuntimeAPI = netip.MustParseAddrPort("127.0.0.1:9001")

var (
	// ErrDenied is wrapped by every refusal of an address, network or dial.
	ErrDenied = errors.New("guard: egress denied")
	// ErrBadURL is wrapped by every URL refusal: scheme, userinfo, host, port.
	ErrBadURL = errors.New("guard: bad server URL")
	// ErrRedirect is wrapped by the guarded clients' refusal to follow a redirect.
	ErrRedirect = errors.New("guard: redirect not followed")
)

// DeniedError reports a refused dial. It wraps [ErrDenied]; Reason says why.
// Host is the name that resolved to Addr, empty for a literal address;
// Port is 0 when the address did not parse.
type DeniedError struct {
	Network string
	Host    string
	Addr    string
	Port    int
	Reason  Reason
}

func (e *DeniedError) Error() string {
	target := e.Addr
	if e.Port > 0 {
		target = net.JoinHostPort(e.Addr, strconv.Itoa(e.Port))
	}
	if e.Host != "" {
		target = e.Host + " resolves to " + target
	}
	if e.Reason == ReasonNetwork {
		target = "network " + strconv.Quote(e.Network) + " for " + target
	}
	return fmt.Sprintf("%v: %s (%s)", ErrDenied, target, e.Reason)
}

// Unwrap returns [ErrDenied].
func (e *DeniedError) Unwrap() error { return ErrDenied }

// Policy decides whether a resolved address may be dialed. It is immutable
// and safe for concurrent use. A nil or zero Policy applies the default deny
// set with no allow entries. Build one with [NewPolicy].
type Policy struct {
	allow      []allowEntry
	runtimeAPI []netip.AddrPort // never allowed, nor loopback on its port; defaultRuntimeAPI when empty
}

type allowEntry struct {
	prefix netip.Prefix
	port   uint16 // 0 means any port
}

func (e allowEntry) String() string {
	if e.port == 0 {
		return e.prefix.String()
	}
	if e.prefix.Addr().Is6() {
		return "[" + e.prefix.String() + "]:" + strconv.Itoa(int(e.port))
	}
	return e.prefix.String() + ":" + strconv.Itoa(int(e.port))
}

// NewPolicy returns a Policy allowing the given entries ahead of the deny set.
// An entry is "PREFIX" or "PREFIX:PORT"; an IPv6 prefix with a port is
// bracketed ("[::1/128]:8080"). NewPolicy reads AWS_LAMBDA_RUNTIME_API
// (default 127.0.0.1:9001). No entry opens the Runtime API, any loopback
// address on its port, or an unspecified address. It returns an error for
// an invalid entry or an unparsable AWS_LAMBDA_RUNTIME_API.
func NewPolicy(allow ...string) (*Policy, error) {
	p := &Policy{}
	for _, s := range allow {
		e, err := parseEntry(s)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, e)
	}
	rt, err := parseRuntimeAPI(os.Getenv(envRuntimeAPI))
	if err != nil {
		return nil, err
	}
	p.runtimeAPI = rt
	return p, nil
}

// ParseAllowList splits s, the value of [EnvAllowList], at commas and
// whitespace and validates each entry as [NewPolicy] does. An empty or blank
// s returns nil.
func ParseAllowList(s string) ([]string, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(fields) == 0 {
		return nil, nil
	}
	for _, f := range fields {
		if _, err := parseEntry(f); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

// HasAllow reports whether p has at least one allow entry.
func (p *Policy) HasAllow() bool { return p != nil && len(p.allow) > 0 }

// String lists p's allow entries, comma-separated.
func (p *Policy) String() string {
	if p == nil {
		return ""
	}
	parts := make([]string, len(p.allow))
	for i, e := range p.allow {
		parts[i] = e.String()
	}
	return strings.Join(parts, ",")
}

// Check returns nil if addr may be dialed on network, else a *[DeniedError].
// Only "tcp4" and "tcp6" pass. IPv4-mapped and NAT64 (64:ff9b::/96)
// addresses are judged by their embedded IPv4. Order: the Runtime API (its
// address, and any loopback or unspecified address, on its port) and the
// unspecified addresses are refused, then allow entries admit, then the deny
// set refuses.
func (p *Policy) Check(network string, addr netip.AddrPort) error {
	deny := func(r Reason) error {
		d := &DeniedError{Network: network, Port: int(addr.Port()), Reason: r}
		if addr.Addr().IsValid() {
			d.Addr = addr.Addr().String()
		} else {
			d.Port = 0
		}
		return d
	}
	if network != "tcp4" && network != "tcp6" {
		return deny(ReasonNetwork)
	}
	a := addr.Addr()
	if !a.IsValid() {
		return deny(ReasonUnparsable)
	}
	if a.Zone() != "" {
		return deny(ReasonZoned)
	}
	e := effective(a)
	port := addr.Port()
	if p.isRuntimeAPI(e, port) {
		return deny(ReasonRuntimeAPI)
	}
	if e.IsUnspecified() {
		return deny(ReasonUnspecified)
	}
	if p != nil {
		for _, ent := range p.allow {
			if ent.prefix.Contains(e) && (ent.port == 0 || ent.port == port) {
				return nil
			}
		}
	}
	if r := denyReason(e); r != ReasonUnknown {
		return deny(r)
	}
	return nil
}

// checkString is Check for an address in "ip:port" form, as dial hooks get it.
func (p *Policy) checkString(network, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DeniedError{Network: network, Addr: address, Reason: ReasonUnparsable}
	}
	return p.Check(network, ap)
}

// isRuntimeAPI reports whether the effective address e on port reaches the
// Runtime API: its configured address, or any loopback or unspecified address
// (a connect to 0.0.0.0 or :: lands on loopback), on its port.
func (p *Policy) isRuntimeAPI(e netip.Addr, port uint16) bool {
	rts := []netip.AddrPort{defaultRuntimeAPI}
	if p != nil && len(p.runtimeAPI) > 0 {
		rts = p.runtimeAPI
	}
	for _, rt := range rts {
		if port == rt.Port() && (e == rt.Addr() || e.IsLoopback() || e.IsUnspecified()) {
			return true
		}
	}
	return false
}

var (
	defaultPolicy atomic.Pointer[Policy]
	zeroPolicy    Policy
)

// SetDefault sets the process-wide policy that [Default] returns; nil
// restores the zero Policy. Safe for concurrent use.
func SetDefault(p *Policy) { defaultPolicy.Store(p) }

// Default returns the process-wide policy set by [SetDefault], or the zero
// Policy (default deny set, no allow entries).
func Default() *Policy {
	if p := defaultPolicy.Load(); p != nil {
		return p
	}
	return &zeroPolicy
}

var (
	mapped4in6 = netip.MustParsePrefix("::ffff:0:0/96")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
)

// effective unmaps IPv4-mapped addresses and extracts the IPv4 embedded in a
// NAT64 well-known-prefix address; other addresses are returned unchanged.
func effective(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

func parseEntry(s string) (allowEntry, error) {
	bad := func(format string, args ...any) (allowEntry, error) {
		return allowEntry{}, fmt.Errorf("guard: allow entry %q: %s", s, fmt.Sprintf(format, args...))
	}
	prefixPart, portPart := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return bad("missing ]")
		}
		prefixPart = s[1:end]
		if rest := s[end+1:]; rest != "" {
			if rest[0] != ':' || len(rest) == 1 {
				return bad("want [PREFIX]:PORT")
			}
			portPart = rest[1:]
		}
	case strings.Count(s, ":") == 1:
		i := strings.IndexByte(s, ':')
		prefixPart, portPart = s[:i], s[i+1:]
	}
	pfx, err := netip.ParsePrefix(prefixPart)
	if err != nil {
		if slash := strings.IndexByte(s, '/'); slash >= 0 && strings.LastIndexByte(s, ':') > slash && !strings.HasPrefix(s, "[") {
			return bad("an IPv6 prefix with a port is written [PREFIX]:PORT, e.g. [::1/128]:8080")
		}
		return bad("want CIDR prefix, e.g. 10.0.0.0/8, 127.0.0.1/32:8080 or [::1/128]:8080: %v", err)
	}
	if m := pfx.Masked(); m != pfx {
		return bad("host bits set; did you mean %s?", m)
	}
	var port uint16
	if portPart != "" {
		n, err := strconv.ParseUint(portPart, 10, 16)
		if err != nil || n == 0 {
			return bad("port %q is not in 1-65535", portPart)
		}
		port = uint16(n)
	}
	if pfx.Addr().Is6() && pfx.Bits() >= 96 && (mapped4in6.Contains(pfx.Addr()) || nat64.Contains(pfx.Addr())) {
		if pfx.Bits() == 96 {
			return bad("covers every IPv4 address; write 0.0.0.0/0 if that is meant")
		}
		pfx = netip.PrefixFrom(effective(pfx.Addr()), pfx.Bits()-96)
	}
	return allowEntry{prefix: pfx, port: port}, nil
}

func parseRuntimeAPI(v string) ([]netip.AddrPort, error) {
	if v == "" {
		return []netip.AddrPort{defaultRuntimeAPI}, nil
	}
	host, portStr, err := net.SplitHostPort(v)
	if err != nil {
		return nil, fmt.Errorf("guard: %s=%q: %v", envRuntimeAPI, v, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("guard: %s=%q: bad port", envRuntimeAPI, v)
	}
	if host == "localhost" {
		return []netip.AddrPort{netip.AddrPortFrom(defaultRuntimeAPI.Addr(), uint16(port))}, nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return nil, fmt.Errorf("guard: %s=%q: host is not an IP address or localhost", envRuntimeAPI, v)
	}
	return []netip.AddrPort{netip.AddrPortFrom(effective(a), uint16(port))}, nil
}
