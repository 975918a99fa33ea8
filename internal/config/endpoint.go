package config

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Endpoint defaults used by ResolveEndpoint.
const (
	// LocalBaseURL is probed when neither an API key nor a base URL is
	// configured: Ollama's OpenAI-compatible API on its default port.
	LocalBaseURL = "http://127.0.0.1:11434/v1"
	// DefaultModel is the model for every non-loopback endpoint when none is
	// configured: small, cheap and able to call tools.
	DefaultModel = "gpt-4o-mini"
	// DefaultLocalModel is the model for loopback endpoints (the probed
	// local server or a configured loopback base URL) when none is
	// configured. It is Ollama's name for Llama 3.2 3B, a small model with
	// tool calling; pull it with `ollama pull llama3.2`.
	DefaultLocalModel = "llama3.2"
	// ProbeTimeout bounds DefaultProbe.
	ProbeTimeout = 300 * time.Millisecond
	// maxProbeBody bounds the /models answer DefaultProbe reads.
	maxProbeBody = 1 << 20
)

// ResolveEndpoint completes BaseURL and Model before any request is made:
//
//   - a base URL is configured: it must be valid, and without an API key it
//     must be a loopback address (127.0.0.0/8, ::1, localhost), else
//     ErrAPIKeyRequired;
//   - only an API key is configured: BaseURL becomes OpenAIBaseURL;
//   - neither: probe (nil means DefaultProbe) is asked about LocalBaseURL;
//     if it answers, BaseURL becomes LocalBaseURL (source "probe"),
//     otherwise ErrNoEndpoint with what to set. If ctx ends first, the
//     error wraps ctx.Err().
//
// An empty Model then becomes DefaultLocalModel for loopback endpoints and
// DefaultModel otherwise. Sources records the choices. ResolveEndpoint is
// idempotent; errors never contain the API key.
func (c *Config) ResolveEndpoint(ctx context.Context, probe func(ctx context.Context, baseURL string) bool) error {
	if c.Sources == nil {
		c.Sources = map[string]string{}
	}
	switch {
	case c.BaseURL != "":
		if reason := checkBaseURL(c.BaseURL); reason != "" {
			return invalidf("base_url from "+sourceName(c.Sources["base_url"]), "base_url", "%s", reason)
		}
		c.BaseURL = normalizeURL(c.BaseURL)
		if c.APIKey == "" && !isLoopback(c.BaseURL) {
			host := ""
			if u, err := url.Parse(c.BaseURL); err == nil {
				host = u.Hostname()
			}
			keyVar := "ODEK_API_KEY (or OPENAI_API_KEY)"
			if k := presetKeyEnv(c.Provider); k != "" && !openAIKeyApplies(c.Provider) {
				keyVar = k + " (or ODEK_API_KEY)"
			}
			return fmt.Errorf("%w: base_url host %q (from %s) is not a loopback address and no API key is set; "+
				"set %s, or api_key in $ODEK_HOME/%s",
				ErrAPIKeyRequired, host, sourceName(c.Sources["base_url"]), keyVar, OperatorFileName)
		}
	case c.APIKey != "":
		c.BaseURL = OpenAIBaseURL
		c.Sources["base_url"] = SourceDefault
	default:
		if probe == nil {
			probe = DefaultProbe
		}
		if !probe(ctx, LocalBaseURL) {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("config: probing local server %s: %w", LocalBaseURL, err)
			}
			return fmt.Errorf("%w: set ODEK_API_KEY (or OPENAI_API_KEY) to use OpenAI, plus ODEK_BASE_URL for another "+
				"OpenAI-compatible provider; or start a local server such as Ollama (no local server answered at %s)",
				ErrNoEndpoint, LocalBaseURL)
		}
		c.BaseURL = LocalBaseURL
		c.Sources["base_url"] = SourceProbe
		if c.Model == "" {
			c.Model = DefaultLocalModel
			c.Sources["model"] = SourceProbe
		}
	}
	if c.Model == "" {
		c.Model = DefaultModel
		if isLoopback(c.BaseURL) {
			c.Model = DefaultLocalModel
		}
		c.Sources["model"] = SourceDefault
	}
	return nil
}

func sourceName(s string) string {
	if s == "" {
		return "caller"
	}
	return s
}

// probeClient never uses a proxy, never follows redirects and keeps no idle
// connections (no goroutines outlive a probe).
var probeClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// DefaultProbe reports whether an OpenAI-compatible server answers at
// baseURL: GET baseURL/models within ProbeTimeout (or ctx, if sooner) must
// return 200 with a JSON object holding a "data" array. It sends no
// credentials.
func DefaultProbe(ctx context.Context, baseURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, normalizeURL(baseURL)+"/models", nil)
	if err != nil {
		return false
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	var body struct {
		Data []json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxProbeBody))
	if err := dec.Decode(&body); err != nil {
		return false
	}
	return body.Data != nil
}
