package oauth

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token lifetimes (Token.ExpiresIn).
const (
	// DefaultLifetime is the lifetime of a token whose expires_in is
	// absent, unreadable ("3600s"), zero or negative: short, so a token of
	// unknown life is soon refreshed rather than trusted for long.
	DefaultLifetime = 5 * time.Minute
	// MaxLifetime caps an absurdly large expires_in (a year).
	MaxLifetime = 365 * 24 * time.Hour
)

// maxAnswerBytes is what x/oauth2 reads of a token answer, and so what
// answerTee keeps.
const maxAnswerBytes = 1 << 20

// Lifetime reads an expires_in value as decoded from JSON or a form: any
// JSON number (3600, 3599.5, 3.6e3) or a string holding one ("3600") is
// that many seconds, capped at MaxLifetime; anything else, and zero or
// less, is DefaultLifetime.
func Lifetime(v any) time.Duration {
	var secs float64
	switch x := v.(type) {
	case float64:
		secs = x
	case json.Number:
		secs, _ = x.Float64()
	case string:
		secs, _ = strconv.ParseFloat(strings.TrimSpace(x), 64)
	}
	switch {
	case math.IsNaN(secs), secs <= 0:
		return DefaultLifetime
	case secs >= MaxLifetime.Seconds():
		return MaxLifetime
	}
	return time.Duration(secs * float64(time.Second))
}

// answerTee keeps a copy of the token endpoint's answer as x/oauth2 reads
// it, so an answer the library refuses (an expires_in it cannot read) can
// still be read: a granted token is never thrown away.
type answerTee struct {
	base http.RoundTripper

	mu     sync.Mutex
	status int
	ctype  string
	body   bytes.Buffer
}

func (a *answerTee) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	a.mu.Lock()
	a.status, a.ctype = resp.StatusCode, resp.Header.Get("Content-Type")
	a.body.Reset()
	a.mu.Unlock()
	resp.Body = &teeBody{ReadCloser: resp.Body, a: a}
	return resp, nil
}

type teeBody struct {
	io.ReadCloser
	a *answerTee
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.a.mu.Lock()
	if room := maxAnswerBytes - b.a.body.Len(); room > 0 {
		b.a.body.Write(p[:min(n, room)])
	}
	b.a.mu.Unlock()
	return n, err
}

// granted reads the kept answer leniently when it was a 2xx JSON object:
// its access_token and refresh_token (strings, else "") and its lifetime.
// ok is false when the answer was not such an object.
func (a *answerTee) granted() (tok Token, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status < 200 || a.status > 299 {
		return Token{}, false
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(a.body.Bytes()))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return Token{}, false
	}
	at, _ := m["access_token"].(string)
	rt, _ := m["refresh_token"].(string)
	return Token{AccessToken: at, RefreshToken: rt, ExpiresIn: Lifetime(m["expires_in"])}, true
}
