package localstack

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// token answers the token endpoint (grant types authorization_code,
// refresh_token and client_credentials), recording each request.
func (s *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	req := TokenRequest{GrantType: f.Get("grant_type"), Scope: f.Get("scope"), Resource: f.Get("resource"), RefreshToken: f.Get("refresh_token")}
	req.AuthMethod, req.ClientID = s.authenticate(r)
	if d := s.Options.TokenDelay; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(status int, code, desc string) {
		req.Error = code
		s.requests = append(s.requests, req)
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	if req.AuthMethod == "" {
		fail(http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	grant := "g-" + random()
	switch req.GrantType {
	case "refresh_token":
		rt := req.RefreshToken
		g, live := s.live[rt]
		switch {
		case !live && s.spent[rt] != "":
			s.reuses++
			s.revoked[s.spent[rt]] = true
			fail(http.StatusBadRequest, "invalid_grant", "refresh token "+rt+" was already used; the grant is revoked")
			return
		case !live, s.revoked[g]:
			fail(http.StatusBadRequest, "invalid_grant", "refresh token "+rt+" is not valid")
			return
		}
		delete(s.live, rt)
		s.spent[rt] = g
		s.spentAll = append(s.spentAll, rt)
		grant = g
	case "authorization_code":
		c, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || c.redirect != f.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			fail(http.StatusBadRequest, "invalid_grant", "the code, its redirect_uri or its code_verifier does not match")
			return
		}
		if req.Scope == "" {
			req.Scope = c.scope
		}
	case "client_credentials":
		if req.AuthMethod == "none" {
			fail(http.StatusUnauthorized, "invalid_client", "a public client cannot use client_credentials")
			return
		}
	default:
		fail(http.StatusBadRequest, "unsupported_grant_type", "")
		return
	}
	s.requests = append(s.requests, req)
	at := "at-" + random()
	s.access[at] = grant
	out := map[string]any{"access_token": at, "token_type": "Bearer"}
	switch {
	case s.rawExp == "absent":
	case s.rawExp != "":
		out["expires_in"] = json.RawMessage(s.rawExp)
	case s.Options.ExpiresIn > 0:
		out["expires_in"] = int(s.Options.ExpiresIn / time.Second)
		s.expiry[at] = time.Now().Add(s.Options.ExpiresIn)
	}
	if req.GrantType == "refresh_token" || req.GrantType == "authorization_code" {
		next := "rt-" + random()
		s.live[next] = grant
		out["refresh_token"] = next
	}
	if scope := req.Scope; scope != "" || s.Options.Scope != "" {
		if scope == "" {
			scope = s.Options.Scope
		}
		out["scope"] = scope
	}
	writeJSON(w, http.StatusOK, out)
}

// authenticate returns the method the client used and its id, or "" when
// authentication failed.
func (s *AuthServer) authenticate(r *http.Request) (method, clientID string) {
	o := s.Options
	f := r.PostForm
	if h := r.Header.Get("Authorization"); h != "" {
		raw, ok := strings.CutPrefix(h, "Basic ")
		if !ok {
			return "", ""
		}
		b, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return "", ""
		}
		id, secret, _ := strings.Cut(string(b), ":")
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if id != o.ClientID || secret != o.ClientSecret || f.Has("client_secret") {
			return "", id
		}
		return "client_secret_basic", id
	}
	id := f.Get("client_id")
	switch {
	case f.Has("client_assertion"):
		if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || o.PublicKey == nil {
			return "", id
		}
		var claims jwt.RegisteredClaims
		_, err := jwt.ParseWithClaims(f.Get("client_assertion"), &claims, func(*jwt.Token) (any, error) { return o.PublicKey, nil },
			jwt.WithAudience(s.TokenURL), jwt.WithIssuer(o.ClientID), jwt.WithSubject(o.ClientID), jwt.WithExpirationRequired(),
			jwt.WithValidMethods([]string{"RS256", "ES256", "ES384", "ES512", "EdDSA"}))
		if err != nil || claims.ID == "" || (id != "" && id != o.ClientID) {
			return "", id
		}
		return "private_key_jwt", o.ClientID
	case f.Has("client_secret"):
		if id != o.ClientID || f.Get("client_secret") != o.ClientSecret {
			return "", id
		}
		return "client_secret_post", id
	case id == o.ClientID:
		return "none", id
	}
	return "", id
}
