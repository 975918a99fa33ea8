// Package authtest runs a strict OAuth 2.1 authorization server and an
// OAuth-protected MCP endpoint on loopback for mcpauth's and cmd/odek's
// tests. The server rejects what RFC 6749, RFC 7636, RFC 7591, RFC 8707
// and the MCP authorization spec tell a server to reject: a missing or
// wrong code_verifier, a plain (non-S256) challenge, a redirect_uri other
// than the registered one (and at the token endpoint other than the one
// of the authorization request), a reused code (which also revokes the
// tokens it issued), a missing or foreign resource, a rotated or revoked
// refresh token. The MCP endpoint answers 401 with a WWW-Authenticate
// challenge naming its protected-resource metadata unless the bearer token
// is live and issued for it.
//
// All methods are safe for concurrent use.
package authtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Server is the authorization server plus the protected MCP endpoint, on
// one loopback origin: the MCP endpoint is URL()+"/mcp".
type Server struct {
	srv *httptest.Server
	// TTL is the lifetime of issued access tokens (default 1h).
	TTL time.Duration

	mu       sync.Mutex
	clients  map[string]client
	codes    map[string]*grant
	access   map[string]token
	refresh  map[string]token
	requests []Request
	// counters tests read with Counts
	registrations, refreshes, revocations int
	now                                   func() time.Time
}

type client struct{ redirect string }

type grant struct {
	clientID, redirect, challenge, resource, scope string
	used                                           bool
	issued                                         []string // tokens issued from it
}

type token struct {
	clientID, resource string
	expiry             time.Time
}

// Request is one request the MCP endpoint accepted.
type Request struct {
	Method string // JSON-RPC method
	Token  string
}

// New starts the server; it closes when the test ends.
func New(t interface{ Cleanup(func()) }) *Server {
	s := &Server{TTL: time.Hour, clients: map[string]client{}, codes: map[string]*grant{}, access: map[string]token{}, refresh: map[string]token{}, now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.prm)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.asMeta)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /revoke", s.revoke)
	mux.HandleFunc("/mcp", s.mcp)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the origin (issuer) of the server.
func (s *Server) URL() string { return s.srv.URL }

// MCPURL is the protected MCP endpoint.
func (s *Server) MCPURL() string { return s.srv.URL + "/mcp" }

// Resource is the canonical resource of the MCP endpoint.
func (s *Server) Resource() string { return s.MCPURL() }

// ExpireAccessTokens makes every issued access token expired.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.access {
		v.expiry = time.Unix(1, 0)
		s.access[k] = v
	}
}

// RevokeRefreshTokens invalidates every refresh token.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
}

// Counts returns how many clients registered, refreshes were granted and
// revocations were asked for.
func (s *Server) Counts() (registrations, refreshes, revocations int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registrations, s.refreshes, s.revocations
}

// Requests returns the MCP requests accepted so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func oauthErr(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) prm(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"resource": s.Resource(), "authorization_servers": []string{s.URL()}, "scopes_supported": []string{"mcp:tools"}})
}

func (s *Server) asMeta(w http.ResponseWriter, r *http.Request) {
	u := s.URL()
	writeJSON(w, 200, map[string]any{
		"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
		"registration_endpoint": u + "/register", "revocation_endpoint": u + "/revoke",
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs []string `json:"redirect_uris"`
		GrantTypes   []string `json:"grant_types"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&m); err != nil {
		oauthErr(w, 400, "invalid_client_metadata", "body is not JSON")
		return
	}
	if len(m.RedirectURIs) != 1 {
		oauthErr(w, 400, "invalid_redirect_uri", "exactly one redirect_uri")
		return
	}
	ru, err := url.Parse(m.RedirectURIs[0])
	if err != nil || ru.Scheme != "http" || (ru.Hostname() != "127.0.0.1" && ru.Hostname() != "localhost") {
		oauthErr(w, 400, "invalid_redirect_uri", "only loopback http redirect URIs")
		return
	}
	if m.AuthMethod != "none" {
		oauthErr(w, 400, "invalid_client_metadata", "public clients only")
		return
	}
	id := "client-" + random()
	s.mu.Lock()
	s.clients[id] = client{redirect: m.RedirectURIs[0]}
	s.registrations++
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	// Errors before the redirect URI is trusted are shown, not redirected.
	if !ok {
		http.Error(w, "unknown client_id", 400)
		return
	}
	if q.Get("redirect_uri") != c.redirect {
		http.Error(w, "redirect_uri is not the registered one", 400)
		return
	}
	fail := func(code, desc string) {
		v := url.Values{"error": {code}, "error_description": {desc}, "state": {q.Get("state")}}
		http.Redirect(w, r, c.redirect+"?"+v.Encode(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "code only")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with S256 is required")
	case q.Get("state") == "":
		fail("invalid_request", "state is required")
	case q.Get("resource") != s.Resource():
		fail("invalid_target", "resource must be "+s.Resource())
	default:
		code := random()
		s.mu.Lock()
		s.codes[code] = &grant{clientID: q.Get("client_id"), redirect: c.redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
		s.mu.Unlock()
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		http.Redirect(w, r, c.redirect+"?"+v.Encode(), http.StatusFound)
	}
}

func (s *Server) issue(clientID, resource string, g *grant) map[string]any {
	at, rt := random(), random()
	s.access[at] = token{clientID: clientID, resource: resource, expiry: s.now().Add(s.TTL)}
	s.refresh[rt] = token{clientID: clientID, resource: resource}
	if g != nil {
		g.issued = append(g.issued, at, rt)
	}
	return map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.TTL / time.Second), "refresh_token": rt}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthErr(w, 400, "invalid_request", "form")
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[f.Get("client_id")]; !ok {
		oauthErr(w, 401, "invalid_client", "unknown client_id")
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := s.codes[f.Get("code")]
		switch {
		case !ok:
			oauthErr(w, 400, "invalid_grant", "unknown code")
		case g.used:
			// RFC 6749 §4.1.2: a reused code revokes what it issued.
			for _, t := range g.issued {
				delete(s.access, t)
				delete(s.refresh, t)
			}
			oauthErr(w, 400, "invalid_grant", "code already used")
		case g.clientID != f.Get("client_id"):
			oauthErr(w, 400, "invalid_grant", "code issued to another client")
		case f.Get("redirect_uri") != g.redirect:
			oauthErr(w, 400, "invalid_grant", "redirect_uri differs from the authorization request's")
		case f.Get("code_verifier") == "":
			oauthErr(w, 400, "invalid_request", "code_verifier missing")
		case s256(f.Get("code_verifier")) != g.challenge:
			oauthErr(w, 400, "invalid_grant", "code_verifier does not match the challenge")
		case f.Get("resource") != g.resource:
			oauthErr(w, 400, "invalid_target", "resource differs from the authorization request's")
		default:
			g.used = true
			writeJSON(w, 200, s.issue(g.clientID, g.resource, g))
		}
	case "refresh_token":
		t, ok := s.refresh[f.Get("refresh_token")]
		switch {
		case !ok:
			oauthErr(w, 400, "invalid_grant", "unknown or revoked refresh token")
		case t.clientID != f.Get("client_id"):
			oauthErr(w, 400, "invalid_grant", "refresh token issued to another client")
		case f.Get("resource") != t.resource:
			oauthErr(w, 400, "invalid_target", "resource missing or foreign")
		default:
			delete(s.refresh, f.Get("refresh_token")) // rotation
			s.refreshes++
			writeJSON(w, 200, s.issue(t.clientID, t.resource, nil))
		}
	default:
		oauthErr(w, 400, "unsupported_grant_type", f.Get("grant_type"))
	}
}

func s256(v string) string {
	h := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	s.mu.Lock()
	delete(s.refresh, r.PostForm.Get("token"))
	delete(s.access, r.PostForm.Get("token"))
	s.revocations++
	s.mu.Unlock()
	w.WriteHeader(200)
}

// mcp is a minimal Streamable HTTP MCP server (JSON answers) with one
// tool, "whoami", behind bearer-token checks.
func (s *Server) mcp(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	t, live := s.access[tok]
	live = ok && live && t.resource == s.Resource() && s.now().Before(t.expiry)
	s.mu.Unlock()
	if !live {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`, s.URL()))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, "bad json", 400)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: m.Method, Token: tok})
	s.mu.Unlock()
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result any
	switch m.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		result = map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "authtest", "version": "1"}}
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{"name": "whoami", "description": "says which client called", "inputSchema": map[string]any{"type": "object"}}}}
	case "tools/call":
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "client " + t.clientID}}}
	default:
		writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		return
	}
	writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
}

// Browser follows an authorization URL as a browser would for a user who
// approves: GET it, and GET the Location it redirects to (the loopback
// callback). It returns the final status code.
func Browser(authURL string) (int, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, fmt.Errorf("authorize answered %d", resp.StatusCode)
	}
	resp, err = hc.Get(resp.Header.Get("Location"))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Redirect returns the Location the authorization endpoint redirects
// authURL to, without following it (the manual flow's pasted URL).
func Redirect(authURL string) (string, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("authorize answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location"), nil
}
