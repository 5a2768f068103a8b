package localstack

// An AuthServer is a small OAuth 2.1 authorization server on loopback. It
// rotates refresh tokens (each is good once; presenting a spent
// one is counted by Reuses and revokes its whole grant, as strict servers
// do), counts token requests, records spent refresh tokens, issues
// expires_in, checks client_secret_basic, client_secret_post, none and
// private_key_jwt, serves RFC 8414 metadata, answers RFC 7662 token
// introspection (so a server in another process can check its tokens), and
// runs the authorization-code flow: dynamic registration (of its one
// client) and an authorization endpoint that approves at once (PKCE S256
// required). Its refusals quote the
// presented refresh token in error_description, so tests can check that
// nothing repeats what a server says.

import (
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// AuthOptions configure an AuthServer. The zero value is usable.
type AuthOptions struct {
	ClientID     string           // default "mcpfn-test-client"
	ClientSecret string           // default a random "cs-…"
	PublicKey    crypto.PublicKey // verifies private_key_jwt assertions; nil refuses them
	// AuthMethods is token_endpoint_auth_methods_supported in the metadata
	// (default client_secret_basic, client_secret_post, private_key_jwt,
	// none). The token endpoint accepts every method whatever it lists.
	AuthMethods []string
	ExpiresIn   time.Duration // default 1 h; negative: no expires_in
	Scope       string        // the scope granted when none is asked
	// TokenDelay holds every token answer that long (after the request is
	// counted), so concurrent clients overlap.
	TokenDelay time.Duration
}

// TokenRequest is one request to the token endpoint, as the Server saw it.
type TokenRequest struct {
	GrantType    string
	AuthMethod   string // how the client authenticated; "" when it failed
	ClientID     string
	Scope        string
	Resource     string
	RefreshToken string // the one presented, for grant_type refresh_token
	Error        string // the OAuth error answered, "" for a token
}

// AuthServer is the authorization server. Its methods are safe for concurrent use.
type AuthServer struct {
	Issuer   string // the issuer and base URL, http://127.0.0.1:port
	TokenURL string // Issuer + "/token"
	// IntrospectionURL is Issuer + "/introspect" (RFC 7662): a POSTed
	// token=… is answered {"active": true, "exp": …, "client_id": …} for
	// an access token Valid here, else {"active": false}. It asks no client
	// authentication.
	IntrospectionURL string
	Options          AuthOptions

	srv      *http.Server
	listener net.Listener
	mu       sync.Mutex
	hits     int
	requests []TokenRequest
	live     map[string]string // live refresh token → grant id
	spent    map[string]string // spent refresh token → grant id
	spentAll []string
	revoked  map[string]bool      // grant ids
	access   map[string]string    // access token → grant id
	expiry   map[string]time.Time // access token → when it expires (absent: never)
	codes    map[string]authCode  // authorization codes not yet exchanged
	reuses   int
	rawExp   string // SetExpiresInJSON
}

// SetExpiresInJSON makes every later token answer carry expires_in written
// exactly as raw JSON (3599.5, 3.6e3, "3600s", -5), or none when raw is
// "absent"; "" restores Options.ExpiresIn. Access tokens then never expire
// here.
func (s *AuthServer) SetExpiresInJSON(raw string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rawExp = raw
}

// authCode is an authorization the /authorize endpoint granted.
type authCode struct {
	challenge, redirect, scope string
}

// StartAuthServer starts an AuthServer on a free 127.0.0.1 port; call
// Close to stop it. Errors are the listener's.
func StartAuthServer(o AuthOptions) (*AuthServer, error) {
	if o.ClientID == "" {
		o.ClientID = "mcpfn-test-client"
	}
	if o.ClientSecret == "" {
		o.ClientSecret = "cs-" + random()
	}
	if o.AuthMethods == nil {
		o.AuthMethods = []string{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"}
	}
	if o.ExpiresIn == 0 {
		o.ExpiresIn = time.Hour
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	s := &AuthServer{Options: o, live: map[string]string{}, spent: map[string]string{}, revoked: map[string]bool{},
		access: map[string]string{}, expiry: map[string]time.Time{}, codes: map[string]authCode{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /introspect", s.introspect)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	s.listener = ln
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.hits++
			s.mu.Unlock()
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	// Set before serving: the first request may come from another process.
	s.Issuer = "http://" + ln.Addr().String()
	s.TokenURL = s.Issuer + "/token"
	s.IntrospectionURL = s.Issuer + "/introspect"
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and closes its connections.
func (s *AuthServer) Close() { _ = s.srv.Close() }

// AllowEntry is the guard allow entry for this server's address and port
// only, e.g. "127.0.0.1/32:41234".
func (s *AuthServer) AllowEntry() string { return AllowEntry(s.listener.Addr()) }

// AllowEntry is the guard allow entry for TCP address a and its port only.
func AllowEntry(a net.Addr) string {
	ap := a.(*net.TCPAddr).AddrPort()
	if ap.Addr().Is6() {
		return fmt.Sprintf("[%s/128]:%d", ap.Addr(), ap.Port())
	}
	return fmt.Sprintf("%s/32:%d", ap.Addr(), ap.Port())
}

// IssueRefreshToken starts a grant, as an authorization-code exchange
// would, and returns its refresh token.
func (s *AuthServer) IssueRefreshToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := "rt-" + random()
	s.live[rt] = "g-" + random()
	return rt
}

// IssueAccessToken returns an access token valid at the Server (and so at
// its Resources) without a request.
func (s *AuthServer) IssueAccessToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := "at-" + random()
	s.access[at] = "g-" + random()
	return at
}

// Revoke ends the grant of refresh or access token tok: its tokens stop
// working and its refresh token gets invalid_grant.
func (s *AuthServer) Revoke(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[string]string{s.live, s.spent, s.access} {
		if g, ok := m[tok]; ok {
			s.revoked[g] = true
		}
	}
}

// Valid reports whether the access token was issued here and not revoked.
func (s *AuthServer) Valid(accessToken string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.access[accessToken]
	return ok && !s.revoked[g]
}

// Hits is the number of HTTP requests the Server got, any path.
func (s *AuthServer) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// TokenRequests returns the token requests so far, in order.
func (s *AuthServer) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// SpentRefreshTokens returns the refresh tokens exchanged successfully, in
// order: each appears once.
func (s *AuthServer) SpentRefreshTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.spentAll)
}

// Reuses is how many times a spent refresh token was presented again.
func (s *AuthServer) Reuses() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reuses
}

func (s *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                s.Issuer,
		"authorization_endpoint":                s.Issuer + "/authorize",
		"token_endpoint":                        s.TokenURL,
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": s.Options.AuthMethods,
		"introspection_endpoint":                s.IntrospectionURL,
		"registration_endpoint":                 s.Issuer + "/register",
	})
}

// register answers dynamic client registration (RFC 7591) with the one
// client the Server knows: Options.ClientID and ClientSecret, authenticating
// with client_secret_basic.
func (s *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": s.Options.ClientID, "client_secret": s.Options.ClientSecret,
		"redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "client_secret_basic"})
}

// authorize approves at once: for the Server's client with a PKCE S256
// challenge it redirects to redirect_uri with a code and the state.
func (s *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" || q.Get("client_id") != s.Options.ClientID ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := "code-" + random()
	s.mu.Lock()
	s.codes[code] = authCode{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), scope: q.Get("scope")}
	s.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// Live reports whether refresh token rt can still be exchanged.
func (s *AuthServer) Live(rt string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.live[rt]
	return ok && !s.revoked[g]
}

func (s *AuthServer) introspect(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	tok := r.PostForm.Get("token")
	if !s.Valid(tok) {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	out := map[string]any{"active": true, "client_id": s.Options.ClientID, "token_type": "Bearer"}
	s.mu.Lock()
	if exp, ok := s.expiry[tok]; ok {
		out["exp"] = exp.Unix()
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
