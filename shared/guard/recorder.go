package guard

import (
	"errors"
	"net/http"
	"sync"
)

// Recorder is a RoundTripper that passes requests to Next (nil:
// http.DefaultTransport) and keeps the last refusal of the guard's dialer
// it saw: libraries above it (x/oauth2, go-sdk's auth) may report that
// refusal as text only, and a caller needs its type. Safe for concurrent
// use.
type Recorder struct {
	Next http.RoundTripper

	mu     sync.Mutex
	denied *DeniedError
}

// Record returns a copy of c whose transport is a Recorder over c's.
func Record(c *http.Client) (*http.Client, *Recorder) {
	r := &Recorder{Next: c.Transport}
	out := *c
	out.Transport = r
	return &out, r
}

func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	var d *DeniedError
	if err != nil && errors.As(err, &d) {
		r.mu.Lock()
		r.denied = d
		r.mu.Unlock()
	}
	return resp, err
}

// Denied is the last refusal seen since Reset, or nil.
func (r *Recorder) Denied() *DeniedError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.denied
}

// Reset forgets the refusal seen.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.denied = nil
	r.mu.Unlock()
}
