package mcpauth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"golang.org/x/oauth2"
)

// CallbackPath is the path of the loopback redirect URI.
const CallbackPath = "/callback"

// ClientName is sent in dynamic client registration.
const ClientName = "odek"

// LoginOptions configure one login.
type LoginOptions struct {
	// Server is the server's name; URL its Streamable HTTP endpoint.
	Server, URL string
	// ClientID, when set, is a client registered by the operator;
	// ClientSecret its secret ("" ⇒ a public client). Without ClientID
	// the client registers itself (RFC 7591) at the authorization
	// server's registration_endpoint.
	ClientID, ClientSecret string
	// Scopes override the discovered scopes when set.
	Scopes []string
	// Manual selects the flow for a host without a browser: the
	// authorization URL is printed, and the operator pastes the URL the
	// browser was redirected to (it fails to load there) into In.
	// Otherwise odek listens on a loopback port for the redirect.
	Manual bool
	// In is read in the manual flow; Out receives the authorization URL
	// and instructions.
	In  io.Reader
	Out io.Writer
	// HTTPClient carries discovery, registration and token requests.
	// nil ⇒ HTTPClient().
	HTTPClient *http.Client
	// OnURL, when set, is called with the authorization URL once the
	// loopback listener is ready (tests drive the browser's part with it).
	OnURL func(string)
}

// Login runs discovery, registration (unless a client id is configured),
// the authorization-code flow with PKCE (S256), a fresh state and the
// resource parameter, and the code exchange (golang.org/x/oauth2), then
// saves the tokens to store. ctx bounds the whole login (the operator's
// time in the browser included).
func Login(ctx context.Context, store *Store, o LoginOptions) (*Record, error) {
	hc := o.HTTPClient
	if hc == nil {
		hc = HTTPClient()
	}
	if err := mcpclient.ValidateName(o.Server); err != nil {
		return nil, err
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	d, err := Discover(ctx, hc, o.URL)
	if err != nil {
		return nil, err
	}
	scopes := d.Scopes
	if len(o.Scopes) > 0 {
		scopes = o.Scopes
	}

	// The redirect URI: a loopback listener on an ephemeral port (RFC
	// 8252 §7.3), or a fixed port-less URI in the manual flow.
	var ln net.Listener
	redirect := "http://127.0.0.1" + CallbackPath
	if !o.Manual {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("%w: loopback listener: %v", ErrLogin, err)
		}
		defer ln.Close()
		redirect = "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + CallbackPath
	}

	rec := &Record{
		Server: o.Server, Resource: d.Resource, Issuer: d.Server.Issuer,
		AuthURL: d.Server.AuthorizationEndpoint, TokenURL: d.Server.TokenEndpoint, RevocationURL: d.Server.RevocationEndpoint,
		ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: redirect, Scopes: scopes,
	}
	if rec.ClientID == "" {
		if d.Server.RegistrationEndpoint == "" {
			return nil, fmt.Errorf("%w: the authorization server offers no registration_endpoint; register a client there and set oauth.client_id for server %q", ErrRegistration, o.Server)
		}
		rec.ClientID, rec.ClientSecret, err = Register(ctx, hc, d.Server.RegistrationEndpoint, redirect, scopes)
		if err != nil {
			return nil, err
		}
	}

	conf := rec.config(hc)
	verifier := oauth2.GenerateVerifier()
	state := randomState()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.Resource))

	var code string
	if o.Manual {
		fmt.Fprintf(o.Out, "Open this URL in a browser on any machine and approve the access:\n\n  %s\n\nThe browser then fails to load a page on 127.0.0.1; paste that page's full address here and press Enter:\n", authURL)
		if o.OnURL != nil {
			o.OnURL(authURL)
		}
		code, err = readPasted(ctx, o.In, state)
	} else {
		fmt.Fprintf(o.Out, "Open this URL in a browser on this machine and approve the access:\n\n  %s\n\nWaiting for the authorization server to redirect to %s …\n", authURL, redirect)
		if o.OnURL != nil {
			o.OnURL(authURL)
		}
		code, err = awaitCallback(ctx, ln, state)
	}
	if err != nil {
		return nil, err
	}
	xctx := context.WithValue(ctx, oauth2.HTTPClient, hc)
	tok, err := conf.Exchange(xctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.Resource))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return nil, fmt.Errorf("%w: the authorization server refused the code (%s)", ErrLogin, clip(re.ErrorCode))
		}
		return nil, fmt.Errorf("%w: code exchange: %v", ErrLogin, unwrapURLError(err))
	}
	rec.setToken(tok)
	if err := store.Save(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

func randomState() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// callbackResult reads code and state of a redirect's query; an OAuth
// error in the query, a missing code or a state other than want is an
// error (a forged or stale redirect).
func callbackResult(q url.Values, want string) (string, error) {
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("%w: the authorization server answered %s: %s", ErrLogin, clip(e), clip(q.Get("error_description")))
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(want)) != 1 {
		return "", fmt.Errorf("%w: the redirect's state does not match this login (a stale or forged redirect)", ErrLogin)
	}
	code := q.Get("code")
	if code == "" {
		return "", fmt.Errorf("%w: the redirect carries no code", ErrLogin)
	}
	return code, nil
}

// awaitCallback serves the loopback redirect until one request to
// CallbackPath carries the login's state (others are answered 400 and
// ignored), or ctx ends.
func awaitCallback(ctx context.Context, ln net.Listener, state string) (string, error) {
	type res struct {
		code string
		err  error
	}
	got := make(chan res, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, func(w http.ResponseWriter, r *http.Request) {
		code, err := callbackResult(r.URL.Query(), state)
		if err != nil && r.URL.Query().Get("error") == "" {
			http.Error(w, "odek: "+err.Error(), http.StatusBadRequest)
			return // not ours: keep waiting
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<p>odek: login failed: %s</p>", escapeHTML(err.Error()))
		} else {
			io.WriteString(w, "<p>odek: login complete; you may close this window.</p>")
		}
		select {
		case got <- res{code, err}:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10e9}
	go srv.Serve(ln)
	defer func() {
		// Shutdown (not Close): the browser gets its page before the
		// listener goes.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	select {
	case r := <-got:
		return r.code, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("%w: no redirect arrived: %v", ErrLogin, ctx.Err())
	}
}

// readPasted reads one line holding the redirected URL (or its query).
func readPasted(ctx context.Context, in io.Reader, state string) (string, error) {
	if in == nil {
		return "", fmt.Errorf("%w: no input to read the redirected URL from", ErrLogin)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(in)
		s.Buffer(make([]byte, 0, 4096), 64<<10)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	var l string
	select {
	case v, ok := <-line:
		if !ok {
			return "", fmt.Errorf("%w: input ended before the redirected URL was pasted", ErrLogin)
		}
		l = strings.TrimSpace(v)
	case <-ctx.Done():
		return "", fmt.Errorf("%w: %v", ErrLogin, ctx.Err())
	}
	raw := l
	if i := strings.IndexByte(l, '?'); i >= 0 {
		raw = l[i+1:]
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", fmt.Errorf("%w: the pasted text is not a URL with a query", ErrLogin)
	}
	return callbackResult(q, state)
}

// Register performs RFC 7591 dynamic client registration of a public
// client (token_endpoint_auth_method none) using the authorization-code
// and refresh-token grants with redirectURI, and returns its id (and a
// secret if the server issued one anyway).
func Register(ctx context.Context, hc *http.Client, endpoint, redirectURI string, scopes []string) (id, secret string, err error) {
	body := map[string]any{
		"client_name":                ClientName,
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	if len(scopes) > 0 {
		body["scope"] = strings.Join(scopes, " ")
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrRegistration, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrRegistration, unwrapURLError(err))
	}
	defer resp.Body.Close()
	rb, err := readAllLimit(resp.Body, MaxMetadataBytes)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrRegistration, err)
	}
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Error        string `json:"error"`
	}
	_ = json.Unmarshal(rb, &out)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("%w: HTTP %d %s", ErrRegistration, resp.StatusCode, clip(out.Error))
	}
	if out.ClientID == "" {
		return "", "", fmt.Errorf("%w: the answer has no client_id", ErrRegistration)
	}
	return out.ClientID, out.ClientSecret, nil
}

// Logout revokes the stored refresh token (RFC 7009, best effort, when
// the server has a revocation endpoint) and deletes the record. revoked
// reports whether the server confirmed the revocation.
func Logout(ctx context.Context, store *Store, server string, hc *http.Client) (revoked bool, err error) {
	if hc == nil {
		hc = HTTPClient()
	}
	rec, err := store.Load(server)
	if errors.Is(err, ErrNotLoggedIn) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if rec.RevocationURL != "" && rec.RefreshToken != "" {
		form := url.Values{"token": {rec.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {rec.ClientID}}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, rec.RevocationURL, strings.NewReader(form.Encode()))
		if rerr == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if rec.ClientSecret != "" {
				req.SetBasicAuth(url.QueryEscape(rec.ClientID), url.QueryEscape(rec.ClientSecret))
			}
			if resp, derr := hc.Do(req); derr == nil {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				revoked = resp.StatusCode == http.StatusOK
			}
		}
	}
	return revoked, store.Delete(server)
}
