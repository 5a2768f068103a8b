package guard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpfn/mcpfn/shared/guard"
)

// seqResolver answers the i-th lookup with answers[i] (the last one repeats)
// and records the hosts asked for.
type seqResolver struct {
	mu      sync.Mutex
	answers [][]netip.Addr
	asked   []string
}

var _ guard.Resolver = (*seqResolver)(nil)

func (r *seqResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := min(len(r.asked), len(r.answers)-1)
	r.asked = append(r.asked, network+" "+host)
	return r.answers[i], nil
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func mustPolicy(t *testing.T, allow ...string) *guard.Policy {
	t.Helper()
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "")
	p, err := guard.NewPolicy(allow...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wantDenied(t *testing.T, err error, reason string) *guard.DeniedError {
	t.Helper()
	var de *guard.DeniedError
	if !errors.Is(err, guard.ErrDenied) || !errors.As(err, &de) {
		t.Fatalf("err = %v, want a *DeniedError", err)
	}
	if de.Reason.String() != reason {
		t.Fatalf("reason %s, want %s (%v)", de.Reason, reason, err)
	}
	return de
}

// TestDialerRebinding: the name's first answer is allowed, its second is
// loopback; the second dial is refused before any connect. 127.0.0.2,
// admitted by an allow entry, stands in for a public address so that no
// traffic leaves loopback.
func TestDialerRebinding(t *testing.T) {
	one, two, port := listenPair(t)
	p := mustPolicy(t, "127.0.0.2/32:"+strconv.Itoa(port))
	res := &seqResolver{answers: [][]netip.Addr{addrs("127.0.0.2"), addrs("127.0.0.1")}}
	d := &guard.Dialer{Policy: p, Resolver: res}
	target := net.JoinHostPort("mcp.rebind.test", strconv.Itoa(port))

	conn, err := d.DialContext(t.Context(), "tcp", target)
	if err != nil {
		t.Fatalf("first dial: %v", err)
	}
	if got, want := conn.RemoteAddr().String(), two.addr(); got != want {
		t.Errorf("first dial reached %s, want %s", got, want)
	}
	conn.Close()

	_, err = d.DialContext(t.Context(), "tcp", target)
	de := wantDenied(t, err, "loopback")
	if de.Host != "mcp.rebind.test" || de.Addr != "127.0.0.1" || de.Port != port {
		t.Errorf("DeniedError = %+v, want host mcp.rebind.test, 127.0.0.1:%d", de, port)
	}

	if diff := cmp.Diff([]string{"ip mcp.rebind.test", "ip mcp.rebind.test"}, res.asked); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	if got := one.accepted(t); len(got) != 0 {
		t.Errorf("denied 127.0.0.1 accepted %v", got)
	}
	if got := two.accepted(t); len(got) != 1 {
		t.Errorf("allowed 127.0.0.2 accepted %v, want one connection", got)
	}
}

// TestDialerSkipsDeniedAnswers: a name resolving to a denied and an allowed
// address reaches the allowed one; the denied one is never dialed.
func TestDialerSkipsDeniedAnswers(t *testing.T) {
	one, two, port := listenPair(t)
	p := mustPolicy(t, "127.0.0.2/32:"+strconv.Itoa(port))
	for _, order := range [][]netip.Addr{
		addrs("127.0.0.1", "127.0.0.2"),
		addrs("::ffff:127.0.0.1", "169.254.169.254", "127.0.0.2"),
		addrs("127.0.0.2", "127.0.0.1"),
	} {
		d := &guard.Dialer{Policy: p, Resolver: &seqResolver{answers: [][]netip.Addr{order}}}
		conn, err := d.DialContext(t.Context(), "tcp", net.JoinHostPort("mixed.test", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("answers %v: %v", order, err)
		}
		if got, want := conn.RemoteAddr().String(), two.addr(); got != want {
			t.Errorf("answers %v: reached %s, want %s", order, got, want)
		}
		conn.Close()
	}
	if got := one.accepted(t); len(got) != 0 {
		t.Errorf("denied 127.0.0.1 accepted %v", got)
	}
	if got := two.accepted(t); len(got) != 3 {
		t.Errorf("allowed 127.0.0.2 accepted %v, want three connections", got)
	}
}

// TestDialerFallsBackOnConnectError: an allowed address that refuses the
// connection is followed by the next allowed one.
func TestDialerFallsBackOnConnectError(t *testing.T) {
	live := listenCounting(t, "127.0.0.1:0")
	dead, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close() // nothing listens there now: connect is refused
	p := mustPolicy(t, "127.0.0.0/8")
	res := &seqResolver{answers: [][]netip.Addr{addrs("127.0.0.2", "127.0.0.1")}}
	d := &guard.Dialer{Policy: p, Resolver: res}

	if _, err := d.DialContext(t.Context(), "tcp", net.JoinHostPort("dead.test", strconv.Itoa(deadPort))); err == nil || errors.Is(err, guard.ErrDenied) {
		t.Fatalf("dial to a closed port: %v, want a connect error that is not ErrDenied", err)
	}
	conn, err := d.DialContext(t.Context(), "tcp", net.JoinHostPort("live.test", strconv.Itoa(live.port())))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if got := live.accepted(t); len(got) != 1 {
		t.Errorf("live listener accepted %v, want one", got)
	}
}

func TestDialerRefusals(t *testing.T) {
	l := listenCounting(t, "127.0.0.1:0")
	port := strconv.Itoa(l.port())
	tests := []struct {
		name    string
		network string
		address string
		answers []netip.Addr
		reason  string
	}{
		{name: "literal loopback", network: "tcp", address: "127.0.0.1:" + port, reason: "loopback"},
		{name: "literal mapped loopback", network: "tcp", address: "[::ffff:127.0.0.1]:" + port, reason: "loopback"},
		{name: "literal NAT64 loopback", network: "tcp6", address: "[64:ff9b::7f00:1]:" + port, reason: "loopback"},
		{name: "literal zoned", network: "tcp", address: "[fe80::1%lo]:" + port, reason: "zoned"},
		{name: "name to loopback", network: "tcp", address: "local.test:" + port, answers: addrs("127.0.0.1", "::1"), reason: "loopback"},
		{name: "name to metadata", network: "tcp4", address: "imds.test:80", answers: addrs("169.254.169.254"), reason: "metadata"},
		{name: "udp", network: "udp", address: "127.0.0.1:" + port, reason: "network"},
		{name: "unix", network: "unix", address: "/var/run/docker.sock", reason: "network"},
		{name: "service name port", network: "tcp", address: "127.0.0.1:https", reason: "unparsable"},
		{name: "no port", network: "tcp", address: "127.0.0.1", reason: "unparsable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &seqResolver{answers: [][]netip.Addr{tt.answers}}
			d := &guard.Dialer{Resolver: res}
			conn, err := d.DialContext(t.Context(), tt.network, tt.address)
			if err == nil {
				conn.Close()
			}
			wantDenied(t, err, tt.reason)
			if tt.answers == nil && len(res.asked) > 0 {
				t.Errorf("resolver asked %v for a literal", res.asked)
			}
		})
	}
	if got := l.accepted(t); len(got) != 0 {
		t.Errorf("listener accepted %v", got)
	}
}

func TestDialerFamilyFilter(t *testing.T) {
	l := listenCounting(t, "127.0.0.1:0")
	p := mustPolicy(t, "127.0.0.1/32")
	res := &seqResolver{answers: [][]netip.Addr{addrs("::1", "127.0.0.1")}}
	d := &guard.Dialer{Policy: p, Resolver: res}
	conn, err := d.DialContext(t.Context(), "tcp4", net.JoinHostPort("dual.test", strconv.Itoa(l.port())))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if diff := cmp.Diff([]string{"ip4 dual.test"}, res.asked); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}

	res = &seqResolver{answers: [][]netip.Addr{addrs("127.0.0.1")}}
	d = &guard.Dialer{Policy: p, Resolver: res}
	_, err = d.DialContext(t.Context(), "tcp6", net.JoinHostPort("v4only.test", strconv.Itoa(l.port())))
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		t.Errorf("tcp6 dial to an IPv4-only name: %v, want *net.DNSError", err)
	}
}

// TestDialerUsesDefaultAtDialTime: a Dialer without a Policy reads Default
// on every dial, so SetDefault after construction takes effect.
func TestDialerUsesDefaultAtDialTime(t *testing.T) {
	t.Cleanup(func() { guard.SetDefault(nil) })
	l := listenCounting(t, "127.0.0.1:0")
	d := &guard.Dialer{}
	_, err := d.DialContext(t.Context(), "tcp", l.addr())
	wantDenied(t, err, "loopback")

	guard.SetDefault(mustPolicy(t, "127.0.0.1/32:"+strconv.Itoa(l.port())))
	conn, err := d.DialContext(t.Context(), "tcp", l.addr())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if got := l.accepted(t); len(got) != 1 {
		t.Errorf("accepted %v, want one", got)
	}
}

// TestControlHookRefusesBeforeConnect: the ControlContext hook the Dialer
// installs refuses on the socket's address, so a plain net.Dialer carrying
// it never connects to a denied address.
func TestControlHookRefusesBeforeConnect(t *testing.T) {
	l := listenCounting(t, "127.0.0.1:0")
	for _, p := range []*guard.Policy{nil, mustPolicy(t, "127.0.0.2/32")} {
		nd := &net.Dialer{ControlContext: p.Control()}
		conn, err := nd.DialContext(t.Context(), "tcp", l.addr())
		if err == nil {
			conn.Close()
		}
		wantDenied(t, err, "loopback")
	}
	if got := l.accepted(t); len(got) != 0 {
		t.Errorf("listener accepted %v", got)
	}

	nd := &net.Dialer{ControlContext: mustPolicy(t, "127.0.0.1/32").Control()}
	conn, err := nd.DialContext(t.Context(), "tcp", l.addr())
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	conn.Close()
	if got := l.accepted(t); len(got) != 1 {
		t.Errorf("listener accepted %v, want one", got)
	}
}

// TestDialerRefusesUnspecified: on Linux a connect to 0.0.0.0 lands on
// loopback (pinned first with a plain net.Dialer), so no allow list opens
// the unspecified addresses, and with the Runtime API on the listener's port
// no allow list reaches it through 0.0.0.0 or another loopback form.
func TestDialerRefusesUnspecified(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pins Linux connect semantics")
	}
	l := listenCounting(t, "127.0.0.1:0")
	port := strconv.Itoa(l.port())
	conn, err := net.Dial("tcp4", "0.0.0.0:"+port)
	if err != nil {
		t.Fatalf("plain dial to 0.0.0.0: %v", err)
	}
	conn.Close()
	if got := l.accepted(t); len(got) != 1 {
		t.Fatalf("plain dial to 0.0.0.0: listener accepted %v, want one", got)
	}

	allowAll := []string{"0.0.0.0/0", "::/0", "0.0.0.0/32"}
	tests := []struct {
		name       string
		runtimeAPI string
		address    string
		answers    []netip.Addr
		reason     string
	}{
		{name: "literal", address: "0.0.0.0:" + port, reason: "unspecified"},
		{name: "literal IPv6", address: "[::]:" + port, reason: "unspecified"},
		{name: "literal mapped", address: "[::ffff:0.0.0.0]:" + port, reason: "unspecified"},
		{name: "name", address: "zero.test:" + port, answers: addrs("0.0.0.0", "::"), reason: "unspecified"},
		{name: "runtime API via 0.0.0.0", runtimeAPI: "127.0.0.1:" + port, address: "0.0.0.0:" + port, reason: "runtime-api"},
		{name: "runtime API via 127.0.0.1", runtimeAPI: "127.0.0.1:" + port, address: "127.0.0.1:" + port, reason: "runtime-api"},
		{name: "runtime API via localhost", runtimeAPI: "localhost:" + port, address: "rt.test:" + port, answers: addrs("::ffff:127.0.0.1", "0.0.0.0"), reason: "runtime-api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_RUNTIME_API", tt.runtimeAPI)
			p, err := guard.NewPolicy(append(allowAll, "127.0.0.0/8")...)
			if err != nil {
				t.Fatal(err)
			}
			d := &guard.Dialer{Policy: p, Resolver: &seqResolver{answers: [][]netip.Addr{tt.answers}}}
			conn, err := d.DialContext(t.Context(), "tcp", tt.address)
			if err == nil {
				conn.Close()
			}
			wantDenied(t, err, tt.reason)

			if tt.answers == nil {
				nd := &net.Dialer{ControlContext: p.Control()}
				conn, err = nd.DialContext(t.Context(), "tcp", tt.address)
				if err == nil {
					conn.Close()
				}
				wantDenied(t, err, tt.reason)
			}
		})
	}
	if got := l.accepted(t); len(got) != 1 {
		t.Errorf("listener accepted %v, want only the plain dial", got)
	}
}
