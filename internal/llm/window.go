package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Context windows: every run has a known one (issue 29). Resolution, first
// that applies (ResolveWindow):
//
//  1. the operator's context_window for the model;
//  2. what the endpoint reports for it (Client.DiscoverWindow: vLLM's
//     max_model_len and OpenRouter's context_length on GET /models, LM
//     Studio's max_context_length on /api/v0/models, Ollama's
//     <arch>.context_length from POST /api/show), asked once per process
//     and endpoint and model;
//  3. the built-in table of model families (WindowForModel);
//  4. the provider preset's window for its models (Preset.ContextWindow);
//  5. DefaultContextWindow, a conservative default for unknown models.

// DefaultContextWindow is the window assumed for a model nothing else
// knows, in tokens: small enough for every chat model served today, so an
// unknown model is bounded rather than sent an ever-growing history.
const DefaultContextWindow = 32768

// Window sources, as ResolveWindow reports them (start-up log, `odek
// config show`).
const (
	WindowFromOperator  = "operator" // context_window in the config
	WindowFromEndpoint  = "endpoint" // reported by the endpoint
	WindowFromTable     = "table"    // the built-in family table
	WindowFromPreset    = "preset"   // the provider preset
	WindowFromDefault   = "default"  // DefaultContextWindow
	maxDiscoveryBody    = 16 << 20   // an OpenRouter model list is a few MB
	discoveryTimeout    = 5 * time.Second
	maxPlausibleWindow  = 100_000_000 // larger reports are ignored as nonsense
	minPlausibleWindow  = 512
	windowFamilyUnknown = ""
)

// windowRule maps model ids containing (or starting with) a pattern to a
// window. Rules are tried in order; the first match wins, so specific
// patterns come before their family's.
type windowRule struct {
	pattern string
	prefix  bool // match at the start of the bare id only
	tokens  int
}

// windowTable is the documented table (docs/PROVIDERS.md "Context
// windows"): the windows the providers publish for their API models, the
// conservative one where a family's members differ.
var windowTable = []windowRule{
	// OpenAI
	{"gpt-4.1", true, 1_047_576},
	{"gpt-5", true, 400_000},
	{"gpt-oss", true, 131_072},
	{"gpt-4o", true, 128_000},
	{"chatgpt-4o", true, 128_000},
	{"gpt-4-turbo", true, 128_000},
	{"gpt-4-32k", true, 32_768},
	{"gpt-4", true, 8_192},
	{"gpt-3.5-turbo", true, 16_385},
	{"o1-mini", true, 128_000},
	{"o1", true, 200_000},
	{"o3", true, 200_000},
	{"o4-mini", true, 200_000},
	{"codex-mini", true, 200_000},
	// DeepSeek
	{"deepseek-chat", true, 128_000},
	{"deepseek-reasoner", true, 128_000},
	{"deepseek-v3", true, 128_000},
	{"deepseek-r1", true, 128_000},
	{"deepseek-coder", true, 128_000},
	// Google
	{"gemini-1.5-pro", true, 2_097_152},
	{"gemini-", true, 1_048_576},
	{"gemma-3", true, 131_072},
	{"gemma3", true, 131_072},
	{"gemma", true, 8_192},
	// Mistral
	{"magistral", true, 40_000},
	{"codestral", true, 256_000},
	{"devstral", true, 128_000},
	{"mistral-large", true, 128_000},
	{"mistral-medium", true, 128_000},
	{"mistral-small", true, 128_000},
	{"ministral", true, 128_000},
	{"mistral-nemo", true, 128_000},
	{"open-mistral-nemo", true, 128_000},
	{"pixtral", true, 128_000},
	{"mixtral", true, 32_768},
	{"mistral", true, 32_768},
	// Qwen
	{"qwen3-coder", true, 262_144},
	{"qwen3", true, 131_072},
	{"qwen-max", true, 32_768},
	{"qwen-plus", true, 131_072},
	{"qwen-turbo", true, 131_072},
	{"qwen-flash", true, 131_072},
	{"qwq", true, 131_072},
	{"qwen2.5", true, 32_768},
	{"qwen", true, 32_768},
	// Meta Llama
	{"llama-4", true, 131_072},
	{"llama4", true, 131_072},
	{"llama-3.1", true, 131_072},
	{"llama-3.2", true, 131_072},
	{"llama-3.3", true, 131_072},
	{"llama3.1", true, 131_072},
	{"llama3.2", true, 131_072},
	{"llama3.3", true, 131_072},
	{"meta-llama-3.1", true, 131_072},
	{"llama-3", true, 8_192},
	{"llama3", true, 8_192},
	{"llama-2", true, 4_096},
	{"llama2", true, 4_096},
	// Moonshot Kimi
	{"kimi-k2-0711", true, 131_072},
	{"kimi-k2", true, 262_144},
	{"kimi-latest", true, 131_072},
	{"moonshot-v1-8k", true, 8_192},
	{"moonshot-v1-32k", true, 32_768},
	{"moonshot-v1-128k", true, 131_072},
	// Zhipu GLM
	{"glm-4.6", true, 200_000},
	{"glm-4.5", true, 128_000},
	{"glm-4", true, 128_000},
	// xAI Grok
	{"grok-4-fast", true, 2_000_000},
	{"grok-4", true, 256_000},
	{"grok-code-fast", true, 256_000},
	{"grok-3", true, 131_072},
	{"grok-2", true, 131_072},
	// Anthropic (through OpenRouter, LiteLLM or a compatible endpoint)
	{"claude", true, 200_000},
	// Cohere
	{"command-r", true, 128_000},
	{"command-a", true, 256_000},
}

// bareModelID is the id matched against the table: lower case, without a
// routing prefix ("openai/", "@cf/meta/", "accounts/x/models/"), without
// an Ollama ":tag" and without a LiteLLM-style "provider:" prefix.
func bareModelID(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, ':'); i >= 0 {
		m = m[:i]
	}
	return m
}

// WindowForModel returns the built-in table's window for model, or 0 when
// no family matches.
func WindowForModel(model string) int {
	m := bareModelID(model)
	if m == "" {
		return 0
	}
	for _, r := range windowTable {
		if r.prefix && strings.HasPrefix(m, r.pattern) || !r.prefix && strings.Contains(m, r.pattern) {
			return r.tokens
		}
	}
	return 0
}

// WindowResolution is a resolved window and where it came from.
type WindowResolution struct {
	Tokens int    // the context window, in tokens (> 0)
	Source string // one of the WindowFrom* constants
}

// ResolveWindow decides a run's window: operator (> 0) wins, then the
// endpoint's report (> 0), the table, the preset (by name, "" ⇒ none), and
// DefaultContextWindow. It never returns 0 tokens.
func ResolveWindow(model string, operator, endpoint int, preset string) WindowResolution {
	switch {
	case operator > 0:
		return WindowResolution{operator, WindowFromOperator}
	case endpoint > 0:
		return WindowResolution{endpoint, WindowFromEndpoint}
	}
	if n := WindowForModel(model); n > 0 {
		return WindowResolution{n, WindowFromTable}
	}
	if p, ok := LookupPreset(preset); ok && p.ContextWindow > 0 {
		return WindowResolution{p.ContextWindow, WindowFromPreset}
	}
	return WindowResolution{DefaultContextWindow, WindowFromDefault}
}

// discovered caches DiscoverWindow's answers per process, keyed by base
// URL and model; failures are cached too (as 0), so an endpoint is asked
// once.
var discovered sync.Map // string → int

// DiscoverWindow asks the endpoint for model's context window, once per
// process: the answer (or the failure, as 0) is cached. It returns 0 when
// the endpoint reports none. The request is bounded by a 5-second timeout
// and a 16 MiB body; its error is for the start-up log only.
func (c *Client) DiscoverWindow(ctx context.Context, model string) (int, error) {
	key := c.cfg.BaseURL + "\x00" + model
	if v, ok := discovered.Load(key); ok {
		return v.(int), nil
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	n, err := c.discover(ctx, model)
	if ctx.Err() != nil && err != nil {
		return 0, err // a cancelled start is not an answer; ask again next time
	}
	discovered.Store(key, n)
	return n, err
}

func (c *Client) discover(ctx context.Context, model string) (int, error) {
	base, err := url.Parse(strings.TrimRight(strings.TrimSpace(c.cfg.BaseURL), "/"))
	if err != nil {
		return 0, err
	}
	provider := c.cfg.Provider
	if provider == "" {
		provider = PresetForURL(c.cfg.BaseURL)
	}
	root := *base
	root.Path = strings.TrimSuffix(root.Path, "/v1")
	switch {
	case provider == "ollama" || base.Port() == "11434":
		body, _ := json.Marshal(map[string]string{"model": model})
		data, err := c.discoveryGet(ctx, http.MethodPost, root.JoinPath("api", "show").String(), body)
		if err != nil {
			return 0, err
		}
		return ollamaWindow(data), nil
	case provider == "lmstudio" || base.Port() == "1234":
		data, err := c.discoveryGet(ctx, http.MethodGet, root.JoinPath("api", "v0", "models").String(), nil)
		if err != nil {
			return 0, err
		}
		return modelsWindow(data, model), nil
	}
	data, err := c.discoveryGet(ctx, http.MethodGet, base.JoinPath("models").String(), nil)
	if err != nil {
		return 0, err
	}
	return modelsWindow(data, model), nil
}

func (c *Client) discoveryGet(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("llm: context window discovery: %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBody+1))
	if err != nil {
		return nil, fmt.Errorf("llm: context window discovery: %s %s: %w", method, req.URL.Path, err)
	}
	if len(data) > maxDiscoveryBody {
		return nil, fmt.Errorf("llm: context window discovery: %s %s: body over %d bytes", method, req.URL.Path, maxDiscoveryBody)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("llm: context window discovery: %s %s: HTTP %d", method, req.URL.Path, resp.StatusCode)
	}
	return data, nil
}

// plausible keeps a reported window only when it is in a sane range.
func plausible(n int) int {
	if n < minPlausibleWindow || n > maxPlausibleWindow {
		return 0
	}
	return n
}

// modelsWindow reads a model list (GET /models, or LM Studio's
// /api/v0/models) for model's window: vLLM's max_model_len, OpenRouter's
// context_length (or top_provider.context_length), LM Studio's
// max_context_length (loaded_context_length when loaded). The entry whose
// id equals model is used; with one entry and no match (a server serving
// one model under another name), that one.
func modelsWindow(data []byte, model string) int {
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if json.Unmarshal(data, &list) != nil {
		return 0
	}
	type entry struct {
		ID               string          `json:"id"`
		MaxModelLen      json.RawMessage `json:"max_model_len"`
		ContextLength    json.RawMessage `json:"context_length"`
		MaxContextLength json.RawMessage `json:"max_context_length"`
		LoadedContext    json.RawMessage `json:"loaded_context_length"`
		TopProvider      *struct {
			ContextLength json.RawMessage `json:"context_length"`
		} `json:"top_provider"`
	}
	window := func(e entry) int {
		for _, raw := range []json.RawMessage{e.LoadedContext, e.MaxModelLen, e.ContextLength, e.MaxContextLength} {
			if n := plausible(jsonInt(raw)); n > 0 {
				return n
			}
		}
		if e.TopProvider != nil {
			return plausible(jsonInt(e.TopProvider.ContextLength))
		}
		return 0
	}
	var only entry
	for _, raw := range list.Data {
		var e entry
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		if e.ID == model {
			return window(e)
		}
		only = e
	}
	if len(list.Data) == 1 {
		return window(only)
	}
	return 0
}

// ollamaWindow reads POST /api/show's model_info for the
// "<architecture>.context_length" member.
func ollamaWindow(data []byte) int {
	var show struct {
		ModelInfo map[string]json.RawMessage `json:"model_info"`
	}
	if json.Unmarshal(data, &show) != nil {
		return 0
	}
	for k, v := range show.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if n := plausible(jsonInt(v)); n > 0 {
				return n
			}
		}
	}
	return 0
}

// jsonInt is a JSON number (integral) as an int, 0 otherwise.
func jsonInt(raw json.RawMessage) int {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || n < 0 || n > maxPlausibleWindow {
		return 0
	}
	return int(n)
}

// DiscoversWindow reports whether the client's endpoint is one that may
// report a window (local servers, gateways, OpenRouter, an unknown host):
// the cloud presets' model lists carry none, so they are not asked.
func (c *Client) DiscoversWindow() bool {
	provider := c.cfg.Provider
	if provider == "" {
		provider = PresetForURL(c.cfg.BaseURL)
	}
	switch provider {
	case "", "openrouter", "vllm", "ollama", "lmstudio", "llamacpp", "litellm":
		return true
	}
	return false
}
