package config

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// modelsServer is a real OpenAI-compatible /models endpoint on loopback.
func modelsServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("probe sent credentials")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"llama3.2","object":"model"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedURL is a loopback URL on which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// probeAt returns a probe that checks it is asked about LocalBaseURL and
// then really probes target instead.
func probeAt(t *testing.T, target string, called *int) func(context.Context, string) bool {
	return func(ctx context.Context, baseURL string) bool {
		*called++
		if baseURL != LocalBaseURL {
			t.Errorf("probed %q, want %q", baseURL, LocalBaseURL)
		}
		return DefaultProbe(ctx, target)
	}
}

func TestResolveEndpoint(t *testing.T) {
	srv := modelsServer(t)
	closed := closedURL(t)
	tests := []struct {
		name       string
		cfg        Config
		target     string // where the probe really goes; "" ⇒ probe must not run
		wantBase   string
		wantModel  string
		wantSource map[string]string
		wantErr    error
		errHas     []string
	}{
		{name: "key only ⇒ OpenAI", cfg: Config{APIKey: "k"},
			wantBase: OpenAIBaseURL, wantModel: DefaultModel, wantSource: map[string]string{"base_url": SourceDefault, "model": SourceDefault}},
		{name: "key and model kept", cfg: Config{APIKey: "k", Model: "gpt-4.1"}, wantBase: OpenAIBaseURL, wantModel: "gpt-4.1"},
		{name: "key and remote base", cfg: Config{APIKey: "k", BaseURL: "https://openrouter.example/api/v1/"},
			wantBase: "https://openrouter.example/api/v1", wantModel: DefaultModel},
		{name: "nothing, local server answers", cfg: Config{}, target: srv.URL + "/v1",
			wantBase: LocalBaseURL, wantModel: DefaultLocalModel, wantSource: map[string]string{"base_url": SourceProbe, "model": SourceProbe}},
		{name: "nothing, local server answers, model kept", cfg: Config{Model: "qwen3"}, target: srv.URL + "/v1",
			wantBase: LocalBaseURL, wantModel: "qwen3"},
		{name: "nothing, closed port", cfg: Config{}, target: closed, wantErr: ErrNoEndpoint,
			errHas: []string{"ODEK_API_KEY", "OPENAI_API_KEY", "ODEK_BASE_URL", "local server", LocalBaseURL}},
		{name: "nothing, wrong path answers 404", cfg: Config{}, target: srv.URL + "/nope", wantErr: ErrNoEndpoint},
		{name: "loopback base without key", cfg: Config{BaseURL: "http://127.0.0.1:1234/v1"},
			wantBase: "http://127.0.0.1:1234/v1", wantModel: DefaultLocalModel},
		{name: "localhost base without key", cfg: Config{BaseURL: "http://LOCALHOST:8000/v1"},
			wantBase: "http://LOCALHOST:8000/v1", wantModel: DefaultLocalModel},
		{name: "ipv6 loopback without key", cfg: Config{BaseURL: "http://[::1]:8000/v1"}, wantBase: "http://[::1]:8000/v1", wantModel: DefaultLocalModel},
		{name: "remote base without key", cfg: Config{BaseURL: "https://llm.example.com/v1", Sources: map[string]string{"base_url": SourceEnv}},
			wantErr: ErrAPIKeyRequired, errHas: []string{"ODEK_API_KEY", `"llm.example.com"`, "from env"}},
		{name: "remote base with credentials without key", cfg: Config{BaseURL: "https://user:pw123@llm.example.com/v1"},
			wantErr: ErrAPIKeyRequired, errHas: []string{"ODEK_API_KEY"}},
		{name: "look-alike localhost is remote", cfg: Config{BaseURL: "http://localhost.evil.example/v1"}, wantErr: ErrAPIKeyRequired},
		{name: "invalid base", cfg: Config{BaseURL: "ftp://x"}, wantErr: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			probe := func(context.Context, string) bool {
				t.Errorf("probe called")
				return false
			}
			if tt.target != "" {
				probe = probeAt(t, tt.target, &calls)
			}
			c := tt.cfg
			err := c.ResolveEndpoint(t.Context(), probe)
			if tt.target != "" && calls != 1 {
				t.Errorf("probe calls = %d, want 1", calls)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				if strings.Contains(err.Error(), "pw123") {
					t.Errorf("error leaks URL password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if c.BaseURL != tt.wantBase || c.Model != tt.wantModel {
				t.Errorf("got base=%q model=%q, want base=%q model=%q", c.BaseURL, c.Model, tt.wantBase, tt.wantModel)
			}
			for k, v := range tt.wantSource {
				if c.Sources[k] != v {
					t.Errorf("Sources[%q] = %q, want %q", k, c.Sources[k], v)
				}
			}
			// Idempotent: a second call changes nothing and probes nothing.
			before := c.BaseURL + "|" + c.Model
			if err := c.ResolveEndpoint(t.Context(), func(context.Context, string) bool { t.Error("re-probed"); return false }); err != nil || c.BaseURL+"|"+c.Model != before {
				t.Errorf("second resolve: err=%v base=%q model=%q", err, c.BaseURL, c.Model)
			}
		})
	}
}

func TestResolveEndpointCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var c Config
	err := c.ResolveEndpoint(ctx, nil) // nil ⇒ DefaultProbe, which fails at once on a dead ctx
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoEndpoint) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestResolveEndpointAfterLoad(t *testing.T) {
	o := dirs(t, `{"api_key":"k","model":"op-model"}`, `{"model":"proj-model"}`)
	c, _ := mustLoad(t, o)
	if err := c.ResolveEndpoint(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != OpenAIBaseURL || c.Model != "proj-model" || c.Sources["model"] != SourceProject {
		t.Errorf("base=%q model=%q source=%q", c.BaseURL, c.Model, c.Sources["model"])
	}
}

func TestDefaultProbe(t *testing.T) {
	good := modelsServer(t)
	handler := func(status int, body string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(s.Close)
		return s
	}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // released when the probe gives up
	}))
	t.Cleanup(hang.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, good.URL+"/v1/models", http.StatusFound)
	}))
	t.Cleanup(redirect.Close)

	tests := []struct {
		name string
		url  string
		want bool
	}{
		{"answers", good.URL + "/v1", true},
		{"trailing slash", good.URL + "/v1/", true},
		{"empty list still a server", handler(200, `{"data":[]}`).URL, true},
		{"404", good.URL + "/other", false},
		{"500", handler(500, `{"data":[]}`).URL, false},
		{"not json", handler(200, `<html>hello</html>`).URL, false},
		{"json without data", handler(200, `{"models":[]}`).URL, false},
		{"null data", handler(200, `{"data":null}`).URL, false},
		{"closed port", closedURL(t), false},
		{"hangs past timeout", hang.URL, false},
		{"redirect not followed", redirect.URL, false},
		{"garbage url", "http://[::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultProbe(t.Context(), tt.url); got != tt.want {
				t.Errorf("DefaultProbe(%s) = %v, want %v", tt.url, got, tt.want)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:11434/v1", true},
		{"http://127.9.8.7/v1", true},
		{"http://[::1]:80", true},
		{"http://[::ffff:127.0.0.1]:80", true},
		{"http://localhost/v1", true},
		{"https://LocalHost:443", true},
		{"http://0.0.0.0:11434", false},
		{"http://128.0.0.1", false},
		{"http://10.0.0.1", false},
		{"http://localhost.example.com", false},
		{"http://127.0.0.1.nip.io", false},
		{"http://user@evil.example#@127.0.0.1", false},
		{"https://api.openai.com/v1", false},
		{"::not a url", false},
	}
	for _, tt := range tests {
		if got := isLoopback(tt.url); got != tt.want {
			t.Errorf("isLoopback(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}
