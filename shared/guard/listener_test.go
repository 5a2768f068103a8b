package guard_test

import (
	"net"
	"strconv"
	"sync"
	"testing"
)

// acceptCounter is a raw loopback listener that records the remote address
// of every connection it accepts and closes it.
type acceptCounter struct {
	ln      net.Listener
	done    chan struct{}
	mu      sync.Mutex
	seen    []string
	markers map[string]bool
	cond    *sync.Cond
}

func startCounting(addr string) (*acceptCounter, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &acceptCounter{ln: ln, done: make(chan struct{}), markers: map[string]bool{}}
	c.cond = sync.NewCond(&c.mu)
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.seen = append(c.seen, conn.RemoteAddr().String())
			c.cond.Broadcast()
			c.mu.Unlock()
			conn.Close()
		}
	}()
	return c, nil
}

func (c *acceptCounter) stop() {
	c.ln.Close()
	<-c.done
}

func listenCounting(t *testing.T, addr string) *acceptCounter {
	t.Helper()
	c, err := startCounting(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c
}

// listenPair listens on 127.0.0.1 and 127.0.0.2 at the same port.
func listenPair(t *testing.T) (one, two *acceptCounter, port int) {
	t.Helper()
	for range 20 {
		two = listenCounting(t, "127.0.0.2:0")
		port = two.port()
		one, err := startCounting(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // port taken on 127.0.0.1; try another
		}
		t.Cleanup(one.stop)
		return one, two, port
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil, nil, 0
}

func (c *acceptCounter) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

func (c *acceptCounter) addr() string { return c.ln.Addr().String() }

func (c *acceptCounter) accepted(t *testing.T) []string {
	t.Helper()
	got, err := c.flush()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// flush returns the remote addresses of all connections accepted so far,
// its own markers excluded. It first dials a marker connection and waits for
// it: the kernel hands out queued connections in order, so every earlier
// connection has been recorded once the marker is.
func (c *acceptCounter) flush() ([]string, error) {
	marker, err := net.Dial("tcp", c.addr())
	if err != nil {
		return nil, err
	}
	defer marker.Close()
	mark := marker.LocalAddr().String()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markers[mark] = true
	for {
		var got []string
		for _, s := range c.seen {
			if s == mark {
				return got, nil
			}
			if !c.markers[s] {
				got = append(got, s)
			}
		}
		c.cond.Wait()
	}
}
