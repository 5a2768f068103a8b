package localstack

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAuthServerServesMetadataUntilClosed checks the server a program
// starts without a test: RFC 8414 metadata naming its issuer and token
// endpoint, an allow entry for its own port, and nothing after Close.
func TestAuthServerServesMetadataUntilClosed(t *testing.T) {
	s, err := StartAuthServer(AuthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.Issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil || meta.Issuer != s.Issuer || meta.TokenEndpoint != s.TokenURL {
		t.Errorf("metadata %+v (%v), want issuer %s and token endpoint %s", meta, err, s.Issuer, s.TokenURL)
	}
	if port := strings.TrimPrefix(s.Issuer, "http://127.0.0.1:"); s.AllowEntry() != "127.0.0.1/32:"+port {
		t.Errorf("AllowEntry = %q, want 127.0.0.1/32:%s", s.AllowEntry(), port)
	}
	s.Close()
	if resp, err := http.Get(s.Issuer + "/.well-known/oauth-authorization-server"); err == nil {
		resp.Body.Close()
		t.Errorf("server still answers after Close: %s", resp.Status)
	}
}
