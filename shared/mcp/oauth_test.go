package mcp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/mcpfn/mcpfn/shared/mcp/mcptest"
)

// swapHandler is an OAuthHandler whose token Authorize replaces.
type swapHandler struct {
	mu         sync.Mutex
	token      string
	next       string // what Authorize installs
	err        error  // what Authorize returns
	authorized []int  // the status of each refusal Authorize was given
}

func (h *swapHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.token == "" {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: h.token}), nil
}

func (h *swapHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.authorized = append(h.authorized, resp.StatusCode)
	if h.err != nil {
		return h.err
	}
	h.token = h.next
	return nil
}

func (h *swapHandler) calls() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.authorized...)
}

// TestOAuthHandlerAuthorizesOnce pins how go-sdk v1.8.0 uses an
// OAuthHandler: the token goes on every request, a 403 calls Authorize
// and the request is sent again with the new token.
func TestOAuthHandlerAuthorizesOnce(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		s := mcptest.NewServer(t, mcptest.Options{BearerToken: "fresh", Stateless: stateless})
		h := &swapHandler{token: "stale", next: "fresh"}
		c := mustConnect(t, Config{URL: s.URL, HTTPClient: s.Client(), OAuth: h, BearerToken: "ignored"})
		if _, err := c.ListTools(testCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("stateless %t: ListTools: %v", stateless, err)
		}
		if diff := cmp.Diff([]int{http.StatusForbidden}, h.calls()); diff != "" {
			t.Errorf("stateless %t: Authorize calls (-want +got):\n%s", stateless, diff)
		}
		want := []string{"server/discover", "server/discover", "initialize", "notifications/initialized", "tools/list"}
		if stateless {
			want = []string{"server/discover", "server/discover", "tools/list"}
		}
		if diff := cmp.Diff(want, s.Methods()); diff != "" {
			t.Errorf("stateless %t: requests (-want +got):\n%s", stateless, diff)
		}
	}
}

func TestOAuthRefusals(t *testing.T) {
	errAS := errors.New("the token endpoint said no")
	tests := []struct {
		name string
		h    *swapHandler
		want []int
	}{
		{"Authorize fails", &swapHandler{token: "stale", err: errAS}, []int{http.StatusForbidden}},
		{"the new token is refused too", &swapHandler{token: "stale", next: "also stale"}, []int{http.StatusForbidden}},
		{"no token, then a wrong one", &swapHandler{next: "stale"}, []int{http.StatusUnauthorized}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mcptest.NewServer(t, mcptest.Options{BearerToken: "fresh"})
			_, err := Connect(testCtx(t, 10*time.Second), Config{URL: s.URL, HTTPClient: s.Client(), OAuth: tt.h})
			if !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("Connect: %v, want ErrUnauthorized", err)
			}
			if tt.h.err != nil && !errors.Is(err, tt.h.err) {
				t.Errorf("Connect: %v, want it to wrap Authorize's error", err)
			}
			if diff := cmp.Diff(tt.want, tt.h.calls()); diff != "" {
				t.Errorf("Authorize calls (-want +got):\n%s", diff)
			}
			if n := s.CallCount("initialize"); n > 2 {
				t.Errorf("%d initialize requests, want at most 2", n)
			}
		})
	}
}
