package mcpauth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcpauth"
	"github.com/odekrun/odek/mcpclient/mcpauth/authtest"
	"github.com/sirupsen/logrus"
	"golang.org/x/oauth2"
)

func login(t *testing.T, as *authtest.Server, store *mcpauth.Store) *mcpauth.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	browserErr := make(chan error, 1)
	rec, err := mcpauth.Login(ctx, store, mcpauth.LoginOptions{
		Server: "remote", URL: as.MCPURL(),
		OnURL: func(u string) {
			go func() {
				code, err := authtest.Browser(u)
				if err == nil && code != 200 {
					err = errors.New("callback answered " + http.StatusText(code))
				}
				browserErr <- err
			}()
		},
	})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if err := <-browserErr; err != nil {
		t.Fatalf("browser: %v", err)
	}
	return rec
}

func TestLoginUseRefreshRevoke(t *testing.T) {
	as := authtest.New(t)
	home := t.TempDir()
	store := mcpauth.NewStore(home)
	rec := login(t, as, store)
	if reg, _, _ := as.Counts(); rec.RefreshToken == "" || rec.AccessToken == "" || reg != 1 {
		t.Fatalf("login record incomplete: refresh=%v access=%v registrations=%d", rec.RefreshToken != "", rec.AccessToken != "", reg)
	}
	if rec.Resource != as.Resource() {
		t.Fatalf("resource %q, want %q", rec.Resource, as.Resource())
	}
	// 0600 file in a 0700 directory.
	st, err := os.Stat(store.Path("remote"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", st.Mode(), err)
	}
	if st, _ := os.Stat(mcpauth.Dir(home)); st.Mode().Perm() != 0o700 {
		t.Fatalf("token dir mode %v", st.Mode())
	}

	var logs bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	log.SetLevel(logrus.DebugLevel)
	src, err := mcpauth.NewSource(store, "remote", as.MCPURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := mcpclient.Start(ctx, mcpclient.ServerConfig{Name: "remote", URL: as.MCPURL(), Auth: src, Logger: log, MaxRestarts: -1})
	if err != nil {
		t.Fatalf("Start with the login's token: %v", err)
	}
	defer c.Close(ctx)
	call := func() (string, error) {
		r, err := c.Call(ctx, "whoami", []byte(`{}`))
		if err != nil {
			return "", err
		}
		return r.Text, nil
	}
	if out, err := call(); err != nil || !strings.Contains(out, rec.ClientID) {
		t.Fatalf("call: %q %v", out, err)
	}

	// Expiry: the server refuses the token; the Source refreshes once
	// (with the resource parameter: the strict server demands it) and the
	// call goes through with the new token, which is saved.
	as.ExpireAccessTokens()
	if out, err := call(); err != nil || !strings.Contains(out, rec.ClientID) {
		t.Fatalf("call after expiry: %q %v", out, err)
	}
	if _, n, _ := as.Counts(); n != 1 {
		t.Fatalf("refreshes = %d, want 1", n)
	}
	saved, err := store.Load("remote")
	if err != nil || saved.AccessToken == rec.AccessToken || saved.RefreshToken == rec.RefreshToken {
		t.Fatalf("refreshed tokens not saved (rotation): %v", err)
	}

	// Revoked refresh token: the call fails naming the login command.
	as.ExpireAccessTokens()
	as.RevokeRefreshTokens()
	_, err = call()
	var ae *mcpclient.AuthRequiredError
	if !errors.As(err, &ae) || !errors.Is(err, mcpauth.ErrNotLoggedIn) || !strings.Contains(err.Error(), "odek mcp login remote") {
		t.Fatalf("after revocation: %v", err)
	}
	// No token in any error or log line.
	for _, tok := range []string{rec.AccessToken, rec.RefreshToken, saved.AccessToken, saved.RefreshToken} {
		if strings.Contains(err.Error(), tok) || strings.Contains(logs.String(), tok) {
			t.Fatal("a token appears in an error or the log")
		}
	}
}

func TestManualFlow(t *testing.T) {
	as := authtest.New(t)
	store := mcpauth.NewStore(t.TempDir())
	pr, pw := io.Pipe()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := mcpauth.Login(ctx, store, mcpauth.LoginOptions{
		Server: "remote", URL: as.MCPURL(), Manual: true, In: pr, Out: &out,
		OnURL: func(u string) {
			go func() {
				loc, err := authtest.Redirect(u)
				if err != nil {
					pw.CloseWithError(err)
					return
				}
				io.WriteString(pw, loc+"\n")
			}()
		},
	})
	if err != nil {
		t.Fatalf("manual login: %v", err)
	}
	if rec.AccessToken == "" || !strings.Contains(out.String(), "paste") {
		t.Fatalf("manual login: no token or no instructions: %q", out.String())
	}
}

func TestNoLoginNames401(t *testing.T) {
	as := authtest.New(t)
	ctx := context.Background()
	_, err := mcpclient.Start(ctx, mcpclient.ServerConfig{Name: "remote", URL: as.MCPURL(), MaxRestarts: -1})
	var ae *mcpclient.AuthRequiredError
	if !errors.As(err, &ae) || ae.Server != "remote" || !strings.Contains(err.Error(), "odek mcp login remote") {
		t.Fatalf("Start without a token: %v", err)
	}
	// A Source with no stored login says so.
	src, _ := mcpauth.NewSource(mcpauth.NewStore(t.TempDir()), "remote", as.MCPURL(), nil)
	_, err = mcpclient.Start(ctx, mcpclient.ServerConfig{Name: "remote", URL: as.MCPURL(), Auth: src, MaxRestarts: -1})
	if !errors.Is(err, mcpauth.ErrNotLoggedIn) || !errors.Is(err, mcpclient.ErrAuthRequired) {
		t.Fatalf("Start with an empty store: %v", err)
	}
}

// The stored tokens go only to the URL they were issued for: a config
// that points the same server name elsewhere gets none.
func TestSourceBindsResource(t *testing.T) {
	as := authtest.New(t)
	store := mcpauth.NewStore(t.TempDir())
	login(t, as, store)
	src, _ := mcpauth.NewSource(store, "remote", "https://evil.example/mcp", nil)
	if _, err := src.Token(context.Background(), ""); !errors.Is(err, mcpauth.ErrNotLoggedIn) {
		t.Fatalf("token for another URL: %v", err)
	}
	// A token file readable by others is refused.
	os.Chmod(store.Path("remote"), 0o644)
	if _, err := store.Load("remote"); !errors.Is(err, mcpauth.ErrStore) || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("0644 token file: %v", err)
	}
}

func TestLogoutRevokes(t *testing.T) {
	as := authtest.New(t)
	store := mcpauth.NewStore(t.TempDir())
	login(t, as, store)
	revoked, err := mcpauth.Logout(context.Background(), store, "remote", nil)
	if _, _, n := as.Counts(); err != nil || !revoked || n != 1 {
		t.Fatalf("logout: revoked=%v err=%v revocations=%d", revoked, err, n)
	}
	if _, err := os.Stat(store.Path("remote")); !os.IsNotExist(err) {
		t.Fatalf("record still there: %v", err)
	}
}

// The peer is strict: each of these token requests is refused. (Proves
// the login test above would fail if odek omitted the verifier, sent
// another redirect_uri or reused a code.)
func TestPeerIsStrict(t *testing.T) {
	as := authtest.New(t)
	ctx := context.Background()
	hc := mcpauth.HTTPClient()
	redirect := "http://127.0.0.1:1/callback"
	id, _, err := mcpauth.Register(ctx, hc, as.URL()+"/register", redirect, nil)
	if err != nil {
		t.Fatal(err)
	}
	conf := &oauth2.Config{ClientID: id, RedirectURL: redirect, Endpoint: oauth2.Endpoint{AuthURL: as.URL() + "/authorize", TokenURL: as.URL() + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	res := oauth2.SetAuthURLParam("resource", as.Resource())
	code := func(verifier string) string {
		loc, err := authtest.Redirect(conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), res))
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(loc)
		return u.Query().Get("code")
	}
	v := oauth2.GenerateVerifier()
	cases := []struct {
		name string
		do   func() error
	}{
		{"missing verifier", func() error { _, err := conf.Exchange(ctx, code(v), res); return err }},
		{"wrong verifier", func() error {
			_, err := conf.Exchange(ctx, code(v), res, oauth2.VerifierOption(oauth2.GenerateVerifier()))
			return err
		}},
		{"wrong redirect_uri", func() error {
			c2 := *conf
			c2.RedirectURL = "http://127.0.0.1:2/callback"
			_, err := c2.Exchange(ctx, code(v), res, oauth2.VerifierOption(v))
			return err
		}},
		{"missing resource", func() error { _, err := conf.Exchange(ctx, code(v), oauth2.VerifierOption(v)); return err }},
		{"reused code", func() error {
			c := code(v)
			if _, err := conf.Exchange(ctx, c, res, oauth2.VerifierOption(v)); err != nil {
				return errors.New("first use failed: " + err.Error())
			}
			_, err := conf.Exchange(ctx, c, res, oauth2.VerifierOption(v))
			return err
		}},
	}
	for _, tc := range cases {
		err := tc.do()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) {
			t.Errorf("%s: want a refusal, got %v", tc.name, err)
		}
	}
	// Plain PKCE and a foreign redirect are refused at /authorize.
	if loc, _ := authtest.Redirect(conf.AuthCodeURL("st", oauth2.SetAuthURLParam("code_challenge", v), oauth2.SetAuthURLParam("code_challenge_method", "plain"), res)); !strings.Contains(loc, "error=invalid_request") {
		t.Errorf("plain PKCE accepted: %s", loc)
	}
	c2 := *conf
	c2.RedirectURL = "http://127.0.0.1:9/elsewhere"
	if _, err := authtest.Redirect(c2.AuthCodeURL("st", oauth2.S256ChallengeOption(v), res)); err == nil {
		t.Error("unregistered redirect_uri accepted at /authorize")
	}
}

func TestCallbackState(t *testing.T) {
	as := authtest.New(t)
	store := mcpauth.NewStore(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	_, err := mcpauth.Login(ctx, store, mcpauth.LoginOptions{
		Server: "remote", URL: as.MCPURL(), Manual: true, In: pr,
		OnURL: func(u string) {
			go func() {
				loc, _ := authtest.Redirect(u)
				// A forged redirect: right code, another state.
				lu, _ := url.Parse(loc)
				q := lu.Query()
				q.Set("state", "forged")
				lu.RawQuery = q.Encode()
				io.WriteString(pw, lu.String()+"\n")
			}()
		},
	})
	if !errors.Is(err, mcpauth.ErrLogin) || !strings.Contains(err.Error(), "state") {
		t.Fatalf("forged state: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mcpauth.Dir(t.TempDir()), "remote.json")); err == nil {
		t.Fatal("record saved")
	}
}

// Two holders of one store (two worker processes sharing an ODEK_HOME)
// meet an expired token at once: one refreshes, the other takes the saved
// result; the rotated refresh token is not spent twice.
func TestConcurrentRefreshOnce(t *testing.T) {
	as := authtest.New(t)
	store := mcpauth.NewStore(t.TempDir())
	rec := login(t, as, store)
	as.ExpireAccessTokens()
	var wg sync.WaitGroup
	toks := make([]string, 4)
	errs := make([]error, 4)
	for i := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src, _ := mcpauth.NewSource(store, "remote", as.MCPURL(), nil)
			toks[i], errs[i] = src.Token(context.Background(), rec.AccessToken)
		}()
	}
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i] == rec.AccessToken || toks[i] != toks[0] {
			t.Fatalf("holder %d: %v (same token as the others: %v)", i, errs[i], toks[i] == toks[0])
		}
	}
	if _, n, _ := as.Counts(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
}
