package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Resolver looks up a host's addresses. network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Dialer dials TCP through a [Policy]. Its zero value is ready to use.
//   - Policy: nil means [Default] at each dial.
//   - Resolver: nil means net.DefaultResolver.
//   - Timeout: whole-dial cap including resolution; 0 means none.
//
// A Dialer is safe for concurrent use once set up.
type Dialer struct {
	Policy   *Policy
	Resolver Resolver
	Timeout  time.Duration
}

// DialContext resolves address and dials each allowed address in resolver
// order until one connects; denied addresses are never dialed. The policy is
// checked again on the socket's address just before connect. network is
// "tcp", "tcp4" or "tcp6". If every address is denied the error is a
// *[DeniedError]; if a dial was attempted it is the last dial error.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	p := d.Policy
	if p == nil {
		p = Default()
	}
	var lookupNet string
	switch network {
	case "tcp":
		lookupNet = "ip"
	case "tcp4":
		lookupNet = "ip4"
	case "tcp6":
		lookupNet = "ip6"
	default:
		return nil, &DeniedError{Network: network, Addr: address, Reason: ReasonNetwork}
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &DeniedError{Network: network, Addr: address, Reason: ReasonUnparsable}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, &DeniedError{Network: network, Addr: address, Reason: ReasonUnparsable}
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}

	var addrs []netip.Addr
	name := ""
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		name = host
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		addrs, err = r.LookupNetIP(ctx, lookupNet, host)
		if err != nil {
			return nil, err
		}
	}

	var allowed []netip.AddrPort
	var denied error
	for _, a := range addrs {
		fam := familyOf(a)
		if (network == "tcp4" && fam != "tcp4") || (network == "tcp6" && fam != "tcp6") {
			continue
		}
		ap := netip.AddrPortFrom(a, uint16(port))
		if err := p.Check(fam, ap); err != nil {
			var de *DeniedError
			if errors.As(err, &de) {
				de.Host = name
			}
			if denied == nil {
				denied = err
			}
			continue
		}
		allowed = append(allowed, netip.AddrPortFrom(a.Unmap(), uint16(port)))
	}
	if len(allowed) == 0 {
		if denied != nil {
			return nil, denied
		}
		return nil, &net.DNSError{Err: "no " + network + " address", Name: host, IsNotFound: true}
	}

	nd := &net.Dialer{ControlContext: p.control}
	var lastErr error
	for i, ap := range allowed {
		dctx, cancel, err := partialContext(ctx, len(allowed)-i)
		if err != nil {
			lastErr = err
			break
		}
		conn, err := nd.DialContext(dctx, familyOf(ap.Addr()), ap.String())
		cancel()
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	if denied != nil {
		return nil, fmt.Errorf("%w (other addresses of %s refused: %v)", lastErr, host, denied)
	}
	return nil, lastErr
}

func familyOf(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "tcp4"
	}
	return "tcp6"
}

// partialContext gives one of remaining dial attempts its share of ctx's
// deadline, at least 2 s when that much is left (as net.Dialer does).
func partialContext(ctx context.Context, remaining int) (context.Context, context.CancelFunc, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}, nil
	}
	left := time.Until(deadline)
	if left <= 0 {
		return nil, nil, context.DeadlineExceeded
	}
	share := left / time.Duration(remaining)
	const saneMinimum = 2 * time.Second
	if share < saneMinimum {
		share = min(left, saneMinimum)
	}
	c, cancel := context.WithTimeout(ctx, share)
	return c, cancel, nil
}

// control is the net.Dialer.ControlContext hook: the verdict on the socket's
// remote address, taken after resolution and just before connect.
func (p *Policy) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	return p.checkString(network, address)
}
