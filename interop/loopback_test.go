package interop

import (
	"errors"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLoopbackPreload runs each form of listen the peers use under the
// preload and checks the bound address.
func TestLoopbackPreload(t *testing.T) {
	requireInterop(t)
	const printAddr = `console.log(s.address().address); s.close();`
	tests := []struct {
		name, listen string
	}{
		{"port number, read synchronously", `s.listen(0); ` + printAddr},
		{"port string as from PORT", `s.listen('0', () => { ` + printAddr + ` });`},
		{"options without host", `s.listen({ port: 0 }, () => { ` + printAddr + ` });`},
		{"callback only", `s.listen(() => { ` + printAddr + ` });`},
		{"IPv6 wildcard", `s.listen(0, '::', () => { ` + printAddr + ` });`},
		{"IPv4 wildcard", `s.listen(0, '0.0.0.0', () => { ` + printAddr + ` });`},
		{"explicit loopback kept", `s.listen(0, '127.0.0.2', () => { ` + printAddr + ` });`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := `const s = require('node:http').createServer(); ` + tt.listen
			out, err := exec.Command(nodeBin, "--import", "./"+loopbackMJS, "-e", script).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			want := "127.0.0.1"
			if strings.Contains(tt.listen, "127.0.0.2") {
				want = "127.0.0.2"
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("bound %q, want %q", got, want)
			}
		})
	}
}

// TestLoopbackPreloadEndsProcessOnOtherAddress makes a server report a
// non-loopback address (without binding one) and expects exit status 70.
func TestLoopbackPreloadEndsProcessOnOtherAddress(t *testing.T) {
	requireInterop(t)
	script := `const s = require('node:http').createServer();
s.address = () => ({ address: '192.0.2.1', family: 'IPv4', port: 1 });
s.listen(0, () => console.log('still running'));`
	out, err := exec.Command(nodeBin, "--import", "./"+loopbackMJS, "-e", script).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 70 {
		t.Fatalf("err = %v, want exit status 70\n%s", err, out)
	}
	if strings.Contains(string(out), "still running") {
		t.Errorf("the server's listening callback ran:\n%s", out)
	}
}

// TestPeersListenOnLoopbackOnly checks every socket each peer listens on.
func TestPeersListenOnLoopbackOnly(t *testing.T) {
	requireInterop(t)
	peers := map[string]func(t *testing.T) *peer{
		"server-everything": startEverything,
		"ts-sdk-v2":         startTS2,
		"ts-sdk-v1":         startTS1,
	}
	for name, start := range peers {
		t.Run(name, func(t *testing.T) {
			p := start(t)
			addrs, err := listening(p.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(addrs, func(a netip.AddrPort) bool { return int(a.Port()) == p.Port }) {
				t.Errorf("listening on %v, want port %d among them", addrs, p.Port)
			}
			for _, a := range addrs {
				if !a.Addr().IsLoopback() {
					t.Errorf("listening on %v: not loopback", a)
				}
			}
		})
	}
}
