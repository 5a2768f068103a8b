package bench

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDelayCopy checks on a fake clock that every chunk arrives exactly the
// delay after it was read, no earlier than the first-chunk floor, in order,
// and that EOF follows the last chunk.
func TestDelayCopy(t *testing.T) {
	type arrival struct {
		At   time.Duration
		Data string
	}
	for _, tc := range []struct {
		name  string
		floor time.Duration // 0: none
		want  []arrival
	}{
		{
			name: "each chunk delayed",
			want: []arrival{{10 * time.Millisecond, "one"}, {13 * time.Millisecond, "two"}, {30 * time.Millisecond, "three"}},
		},
		{
			name:  "first chunk held back; order kept",
			floor: 25 * time.Millisecond, // "two" is due at 13 ms but follows "one"
			want:  []arrival{{25 * time.Millisecond, "one"}, {25 * time.Millisecond, "two"}, {30 * time.Millisecond, "three"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				in, src := net.Pipe()
				dst, out := net.Pipe()
				var first time.Time
				if tc.floor > 0 {
					first = start.Add(tc.floor)
				}
				go delayCopy(dst, src, 10*time.Millisecond, first)
				go func() {
					for _, w := range []struct {
						at   time.Duration
						data string
					}{{0, "one"}, {3 * time.Millisecond, "two"}, {20 * time.Millisecond, "three"}} {
						time.Sleep(time.Until(start.Add(w.at)))
						if _, err := in.Write([]byte(w.data)); err != nil {
							t.Error(err)
						}
					}
					in.Close()
				}()
				var got []arrival
				buf := make([]byte, 64)
				for {
					n, err := out.Read(buf)
					if n > 0 {
						got = append(got, arrival{time.Since(start), string(buf[:n])})
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("arrivals (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestDelayProxy sends 1 MiB through the proxy to an echo server on real
// sockets: the bytes come back unchanged, after at least two RTTs (the
// handshake's and the exchange's; only a lower bound is checked), and a
// half-close reaches the server.
func TestDelayProxy(t *testing.T) {
	ln := serveOnce(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
	const rtt = 40 * time.Millisecond
	p, err := NewDelayProxy(ln.Addr().String(), rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	start := time.Now()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		if _, err := c.Write(payload); err != nil {
			t.Error(err)
		}
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("echo through the proxy: got %d bytes, not the %d sent", len(got), len(payload))
	}
	if elapsed < 2*rtt {
		t.Errorf("echo took %s, less than two RTTs (%s)", elapsed, 2*rtt)
	}
	if n := p.Accepted(); n != 1 {
		t.Errorf("Accepted = %d, want 1", n)
	}
}

// TestDelayProxyClose closes a proxy with a connection open: the client
// sees the connection end.
func TestDelayProxyClose(t *testing.T) {
	ln := serveOnce(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // never answers
	p, err := NewDelayProxy(ln.Addr().String(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	for p.Accepted() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after Close = %v, want EOF or a reset", err)
	}
}

// serveOnce listens on loopback and hands the first connection to serve;
// the listener closes when the test ends.
func serveOnce(t *testing.T, serve func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return ln
}
