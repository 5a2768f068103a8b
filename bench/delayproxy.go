package bench

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy is a TCP proxy on loopback that gives every exchange a
// round-trip time. Each chunk read from either side is written to the other
// RTT/2 after it was read, in the order read, so one HTTP request and its
// answer cost one RTT. A new connection's first chunk from the client waits
// one RTT more, the cost of the TCP handshake the loopback accept skips. A
// half-close is passed on after the chunks before it. Nothing else is
// delayed or changed.
type DelayProxy struct {
	// Addr is the proxy's listening address, 127.0.0.1:PORT.
	Addr string

	target   string
	half     time.Duration
	ln       net.Listener
	accepted atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewDelayProxy starts a proxy to target (host:port) adding rtt to every
// round trip. The caller must Close it.
func NewDelayProxy(target string, rtt time.Duration) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{Addr: ln.Addr().String(), target: target, half: rtt / 2, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Accepted returns the number of connections accepted so far.
func (p *DelayProxy) Accepted() int64 { return p.accepted.Load() }

// Close stops accepting, closes every open connection and waits for the
// proxy's goroutines.
func (p *DelayProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *DelayProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		accepted := time.Now()
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			client.Close()
			server.Close()
			return
		}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			delayCopy(server, client, p.half, accepted.Add(3*p.half))
		}()
		go func() {
			defer p.wg.Done()
			delayCopy(client, server, p.half, time.Time{})
			// Both directions end once the server's side has.
			p.untrack(client, server)
		}()
	}
}

// track registers the pair for Close; false when the proxy is closed.
func (p *DelayProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *DelayProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}

// chunk is bytes read from one side and the time they are due on the other.
type chunk struct {
	b   []byte
	due time.Time
}

// inFlight bounds the chunks in flight one way (the proxy's window): 256
// reads of at most 32 KiB.
const (
	inFlight  = 256
	chunkSize = 32 << 10
)

// delayCopy copies src to dst, writing each chunk delay after it was read
// and the first one no earlier than first. At src's EOF it half-closes dst
// once every chunk is written; on a write error it closes src.
func delayCopy(dst, src net.Conn, delay time.Duration, first time.Time) {
	ch := make(chan chunk, inFlight)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				due := time.Now().Add(delay)
				if due.Before(first) {
					due = first
				}
				ch <- chunk{buf[:n], due}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			for range ch { // until the reader sees the close
			}
			return
		}
	}
	closeWrite(dst)
}

// closeWrite half-closes c when it can, and closes it otherwise.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}
