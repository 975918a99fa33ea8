package mcpauth

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/odekrun/odek/internal/atomicfile"
	"github.com/odekrun/odek/mcpclient"
	"golang.org/x/oauth2"
)

// Sentinel errors.
var (
	// ErrDiscovery: the server's or authorization server's metadata is
	// missing or unusable.
	ErrDiscovery = errors.New("mcpauth: OAuth discovery failed")
	// ErrRegistration: dynamic client registration failed.
	ErrRegistration = errors.New("mcpauth: client registration failed")
	// ErrLogin: the authorization step failed (denied, state mismatch,
	// code exchange refused).
	ErrLogin = errors.New("mcpauth: login failed")
	// ErrNotLoggedIn: no usable tokens are stored for the server (never
	// logged in, logged out, issued for another URL, or the refresh token
	// was refused); `odek mcp login <server>` fixes it.
	ErrNotLoggedIn = errors.New("mcpauth: not logged in")
	// ErrStore: the token file cannot be read or written.
	ErrStore = errors.New("mcpauth: token store")
)

// Dir is the token directory under an operator's ODEK_HOME.
func Dir(home string) string { return filepath.Join(home, "mcp-auth") }

// MaxRecordBytes bounds a token file.
const MaxRecordBytes = 256 << 10

// Record is one server's stored login: its client registration and
// tokens. It is written 0600 in a 0700 directory; it is never logged.
type Record struct {
	// Server is the server's name; Resource its canonical URI (tokens
	// are only ever sent to a server whose URL has this canonical form).
	Server   string `json:"server"`
	Resource string `json:"resource"`
	Issuer   string `json:"issuer"`
	// Endpoints used at refresh and logout.
	AuthURL       string `json:"authorization_endpoint"`
	TokenURL      string `json:"token_endpoint"`
	RevocationURL string `json:"revocation_endpoint,omitempty"`
	// The client: registered dynamically or configured.
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	RedirectURL  string   `json:"redirect_uri,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	// The tokens.
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

func (r *Record) config(hc *http.Client) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if r.ClientSecret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID: r.ClientID, ClientSecret: r.ClientSecret, RedirectURL: r.RedirectURL, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: style},
	}
}

func (r *Record) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken, Expiry: r.Expiry}
}

func (r *Record) setToken(t *oauth2.Token) {
	r.AccessToken, r.TokenType, r.Expiry = t.AccessToken, t.TokenType, t.Expiry
	if t.RefreshToken != "" {
		r.RefreshToken = t.RefreshToken
	}
}

// Store keeps the records of one ODEK_HOME, one file per server.
type Store struct{ dir string }

// NewStore is the store under home (Dir(home)).
func NewStore(home string) *Store { return &Store{dir: Dir(home)} }

// Path is the file of server's record.
func (s *Store) Path(server string) string { return filepath.Join(s.dir, server+".json") }

// Load reads server's record; ErrNotLoggedIn when there is none. A file
// readable by others than its owner is refused (it holds credentials).
func (s *Store) Load(server string) (*Record, error) {
	if err := mcpclient.ValidateName(server); err != nil {
		return nil, err
	}
	f, err := os.Open(s.Path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: server %q", ErrNotLoggedIn, server)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v; it holds tokens and must be 0600 (chmod 600 it or log in again)", ErrStore, s.Path(server), st.Mode().Perm())
	}
	if st.Size() > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrStore, s.Path(server), st.Size(), MaxRecordBytes)
	}
	var r Record
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %s does not decode: %v", ErrStore, s.Path(server), err)
	}
	if r.Server != server {
		return nil, fmt.Errorf("%w: %s belongs to server %q", ErrStore, s.Path(server), clip(r.Server))
	}
	return &r, nil
}

// Save writes r atomically, 0600, in a 0700 directory.
func (s *Store) Save(r *Record) error {
	if err := mcpclient.ValidateName(r.Server); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(s.Path(r.Server), b, 0o600); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	return nil
}

// Delete removes server's record; no record is not an error.
func (s *Store) Delete(server string) error {
	if err := mcpclient.ValidateName(server); err != nil {
		return err
	}
	if err := os.Remove(s.Path(server)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	return nil
}

// HTTPClient is the client of the OAuth exchanges: TLS verified (1.2+),
// no redirects followed, a 30 s overall timeout.
func HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport: tr,
		Timeout:   30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}
}

// expiryLeeway: a token this close to its expiry is refreshed first.
const expiryLeeway = 30 * time.Second

// Source is the mcpclient.Authorizer of one server: it hands out the
// stored access token and refreshes it (golang.org/x/oauth2) when it has
// expired or the server refused it, saving the new tokens. Refreshes are
// serialised in the process and, on Unix, across processes sharing the
// ODEK_HOME (a lock file), and a refresh first re-reads the file: another
// process may have refreshed (and rotated the refresh token) already.
// Safe for concurrent use.
type Source struct {
	store    *Store
	server   string
	resource string
	hc       *http.Client
	now      func() time.Time

	mu  sync.Mutex
	rec *Record
}

// NewSource is the Authorizer of server, whose URL is serverURL: tokens
// are only handed out when the stored record was issued for that URL's
// canonical form (a server renamed onto another URL does not get them).
// hc nil ⇒ HTTPClient().
func NewSource(store *Store, server, serverURL string, hc *http.Client) (*Source, error) {
	res, err := CanonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = HTTPClient()
	}
	return &Source{store: store, server: server, resource: res, hc: hc, now: time.Now}, nil
}

var _ mcpclient.Authorizer = (*Source)(nil)

// Token implements mcpclient.Authorizer.
func (s *Source) Token(ctx context.Context, stale string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		r, err := s.load()
		if err != nil {
			return "", err
		}
		s.rec = r
	}
	if s.usable(s.rec, stale) {
		return s.rec.AccessToken, nil
	}
	unlock, err := lockFile(s.store.Path(s.server) + ".lock")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrStore, err)
	}
	defer unlock()
	r, err := s.load()
	if err != nil {
		s.rec = nil
		return "", err
	}
	s.rec = r
	if r.AccessToken != stale && s.usable(r, stale) {
		return r.AccessToken, nil // another process refreshed
	}
	if r.RefreshToken == "" {
		return "", fmt.Errorf("%w: server %q: the access token expired and there is no refresh token", ErrNotLoggedIn, s.server)
	}
	t := r.token()
	t.Expiry = time.Unix(1, 0) // force the refresh
	hc := &http.Client{Transport: &resourceParam{base: s.hc.Transport, tokenURL: r.TokenURL, resource: r.Resource}, Timeout: s.hc.Timeout, CheckRedirect: s.hc.CheckRedirect}
	nt, err := r.config(hc).TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), t).Token()
	if err != nil {
		return "", refreshError(s.server, err)
	}
	r.setToken(nt)
	if err := s.store.Save(r); err != nil {
		return "", err
	}
	return r.AccessToken, nil
}

func (s *Source) load() (*Record, error) {
	r, err := s.store.Load(s.server)
	if err != nil {
		return nil, err
	}
	if r.Resource != s.resource {
		return nil, fmt.Errorf("%w: server %q: the stored tokens were issued for %s, the server is now %s", ErrNotLoggedIn, s.server, mcpclient.RedactURL(r.Resource), mcpclient.RedactURL(s.resource))
	}
	return r, nil
}

func (s *Source) usable(r *Record, stale string) bool {
	if r.AccessToken == "" || r.AccessToken == stale {
		return false
	}
	return r.Expiry.IsZero() || s.now().Add(expiryLeeway).Before(r.Expiry)
}

// refreshError describes a failed refresh by the OAuth error code only
// (the response body may echo credentials).
func refreshError(server string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" {
			code = fmt.Sprintf("HTTP %d", re.Response.StatusCode)
		}
		if code == "invalid_grant" || code == "invalid_client" || code == "unauthorized_client" {
			return fmt.Errorf("%w: server %q: the authorization server refused the refresh token (%s)", ErrNotLoggedIn, server, clip(code))
		}
		return fmt.Errorf("%w: server %q: token refresh failed (%s)", ErrLogin, server, clip(code))
	}
	return fmt.Errorf("%w: server %q: token refresh failed: %v", ErrLogin, server, unwrapURLError(err))
}

// resourceParam adds the RFC 8707 resource parameter to token requests
// that lack it (x/oauth2's refresh sends none; the MCP spec requires it
// on every token request).
type resourceParam struct {
	base     http.RoundTripper
	tokenURL string
	resource string
}

func (t *resourceParam) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodPost || req.URL.String() != t.tokenURL || req.Body == nil {
		return base.RoundTrip(req)
	}
	b, err := readAllLimit(req.Body, 64<<10)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form := string(b)
	if !formHas(form, "resource") {
		if form != "" {
			form += "&"
		}
		form += "resource=" + urlQueryEscape(t.resource)
	}
	r2 := req.Clone(req.Context())
	r2.Body = nopCloser(form)
	r2.ContentLength = int64(len(form))
	r2.GetBody = func() (io.ReadCloser, error) { return nopCloser(form), nil }
	return base.RoundTrip(r2)
}
