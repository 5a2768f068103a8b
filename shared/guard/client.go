package guard

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxHeaderBytes caps a response's header block in the guarded clients.
const MaxHeaderBytes = 64 << 10

// Transport settings of the guarded clients.
const (
	dialTimeout         = 10 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	maxIdleConns        = 64
	maxIdleConnsPerHost = 8
)

// NewClient returns a guarded client whose dials obey [Default] as it is at
// dial time. See [NewClientWithPolicy] for its settings.
func NewClient(timeout time.Duration) *http.Client {
	return NewClientWithPolicy(nil, timeout)
}

// NewClientWithPolicy returns a guarded client; timeout caps each request.
// Client.Transport is an *http.Transport with:
//   - dials through a [Dialer] using p (nil: [Default] at dial time), 10 s cap;
//   - no proxy; HTTP/2 attempted; TLS 1.2 minimum, 10 s handshake;
//   - 64 idle connections, 8 per host, closed after 90 s idle;
//   - [MaxHeaderBytes]; no response-header timeout.
//
// Redirects are refused with [ErrRedirect].
func NewClientWithPolicy(p *Policy, timeout time.Duration) *http.Client {
	return newClient(&Dialer{Policy: p, Timeout: dialTimeout}, timeout)
}

func newClient(d *Dialer, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     newTransport(d),
		CheckRedirect: refuseRedirect,
		Timeout:       timeout,
	}
}

func newTransport(d *Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: MaxHeaderBytes,
	}
}

// refuseRedirect is the guarded clients' CheckRedirect: it never follows.
func refuseRedirect(req *http.Request, via []*http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	prev := via[len(via)-1].URL
	msg := fmt.Sprintf("%d from %s to %s", status, redact(prev), redact(req.URL))
	if onlyAddsSlash(prev, req.URL) {
		msg += " (the target only adds a trailing slash: configure the server URL with it)"
	}
	return fmt.Errorf("%w: %s", ErrRedirect, msg)
}

func onlyAddsSlash(from, to *url.URL) bool {
	return from.Scheme == to.Scheme &&
		strings.EqualFold(from.Host, to.Host) &&
		to.Path == from.Path+"/" &&
		to.RawQuery == from.RawQuery
}
