package llm

import (
	"net/url"
	"strings"
)

// Preset describes a known chat-completions provider: where it lives,
// which environment variable conventionally holds its key, a model that
// calls tools, and the quirks the client handles for it. Presets are data;
// internal/config fills a run's base URL and key from them
// (ODEK_PROVIDER or "provider"), and the Client applies the quirks named
// by Config.Provider (or recognised from the base URL's host).
type Preset struct {
	Name    string // the ODEK_PROVIDER value, lower case
	Title   string // for humans
	BaseURL string // API root; "" or a {placeholder} when it depends on the account
	KeyEnv  string // environment variable holding the key; "" for keyless local servers
	Model   string // a model id that supports tool calling, used when none is configured; "" when it depends on the server
	// ModelNote says what to set as the model when Model is "".
	ModelNote string
	Notes     string // known quirks, one line
	// ContextWindow is the window, in tokens, assumed for this provider's
	// models that the built-in table does not know (0 ⇒ none; see
	// ResolveWindow).
	ContextWindow int
	// CachedInputShare is the provider's documented price of input served
	// from its prompt cache, as a share of the input price (0 ⇒ unknown:
	// cached input is priced as any input). Where models differ, the
	// least discount.
	CachedInputShare float64
	// hosts are the API hosts that identify the provider in a base URL.
	hosts []string
	// noStreamOptions: the endpoint rejects "stream_options" (422 "Extra
	// inputs are not permitted") and reports usage in the last chunk anyway.
	noStreamOptions bool
	// dropEcho are assistant-message fields the endpoint rejects when they
	// are sent back (it answers 400 "property 'reasoning' is unsupported"),
	// so they are not echoed even though it returned them. "*" drops every
	// provider field of messages and tool calls: for endpoints that refuse
	// any field they do not document and need none back.
	dropEcho []string
}

var presets = []Preset{
	{Name: "openai", Title: "OpenAI", BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", Model: "gpt-4o-mini",
		ContextWindow: 128_000, CachedInputShare: 0.5, Notes: "strict function calling is opt-in per model (llm.strict_tool_models)", hosts: []string{"api.openai.com"}},
	{Name: "azure", Title: "Azure OpenAI (v1 API)", BaseURL: "https://{resource}.openai.azure.com/openai/v1", KeyEnv: "AZURE_OPENAI_API_KEY", ModelNote: "your deployment name",
		CachedInputShare: 0.5, Notes: "set base_url to your resource; the model is the deployment name", hosts: []string{".openai.azure.com"}},
	{Name: "deepseek", Title: "DeepSeek", BaseURL: "https://api.deepseek.com", KeyEnv: "DEEPSEEK_API_KEY", Model: "deepseek-chat",
		ContextWindow: 128_000, CachedInputShare: 0.1, Notes: "thinking mode (deepseek-reasoner) streams reasoning_content, which must come back on tool-call turns (kept and echoed)", hosts: []string{"api.deepseek.com"}},
	{Name: "gemini", Title: "Google Gemini (OpenAI compatibility)", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", KeyEnv: "GEMINI_API_KEY", Model: "gemini-2.5-flash",
		ContextWindow: 1_048_576, CachedInputShare: 0.25, Notes: "Gemini 3 tool calls carry extra_content.google.thought_signature (echoed); parallel calls may come whole in one delta with empty ids; schemas are an OpenAPI subset ($ref inlined, keywords outside it dropped or rewritten)",
		hosts: []string{"generativelanguage.googleapis.com"}},
	{Name: "mistral", Title: "Mistral", BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY", Model: "mistral-small-latest",
		ContextWindow: 128_000, Notes: "Magistral streams content as an array of text and thinking parts; tool-call ids are 9 alphanumerics; rejects stream_options and any undocumented field (neither sent, nothing echoed)", hosts: []string{"api.mistral.ai"},
		noStreamOptions: true, dropEcho: []string{"*"}},
	{Name: "groq", Title: "Groq", BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY", Model: "llama-3.3-70b-versatile",
		ContextWindow: 131_072, CachedInputShare: 0.5, Notes: "rejects any undocumented field on messages sent back, reasoning/reasoning_content included (nothing echoed)", hosts: []string{"api.groq.com"},
		dropEcho: []string{"*"}},
	{Name: "openrouter", Title: "OpenRouter", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", Model: "openai/gpt-4o-mini",
		Notes: "reasoning and reasoning_details must come back unchanged for reasoning models that call tools (echoed)", hosts: []string{"openrouter.ai"}},
	{Name: "xai", Title: "xAI", BaseURL: "https://api.x.ai/v1", KeyEnv: "XAI_API_KEY", Model: "grok-3-mini",
		ContextWindow: 131_072, CachedInputShare: 0.25, Notes: "grok-3-mini streams reasoning_content (echoed)", hosts: []string{"api.x.ai"}},
	{Name: "dashscope", Title: "Qwen / Alibaba Cloud Model Studio (DashScope)", BaseURL: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", KeyEnv: "DASHSCOPE_API_KEY", Model: "qwen-plus",
		ContextWindow: 131_072, Notes: "thinking models stream reasoning_content (echoed); tool-call deltas repeat the index", hosts: []string{"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com"}},
	{Name: "moonshot", Title: "Moonshot AI (Kimi)", BaseURL: "https://api.moonshot.ai/v1", KeyEnv: "MOONSHOT_API_KEY", Model: "kimi-k2-0905-preview",
		ContextWindow: 131_072, CachedInputShare: 0.25, Notes: "kimi thinking models stream reasoning_content, required back on tool-call turns (echoed)", hosts: []string{"api.moonshot.ai", "api.moonshot.cn"}},
	{Name: "cloudflare", Title: "Cloudflare Workers AI", BaseURL: "https://api.cloudflare.com/client/v4/accounts/{account_id}/ai/v1", KeyEnv: "CLOUDFLARE_API_TOKEN", Model: "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
		ContextWindow: 24_000, Notes: "set base_url with your account id", hosts: []string{"api.cloudflare.com"}},
	{Name: "ollama", Title: "Ollama (local)", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.2",
		Notes: "no key; reasoning models return reasoning (echoed) or <think> blocks (moved out of the answer)"},
	{Name: "vllm", Title: "vLLM (local)", BaseURL: "http://127.0.0.1:8000/v1", Model: "Qwen/Qwen2.5-7B-Instruct",
		Notes: "needs --enable-auto-tool-choice and a --tool-call-parser; without a reasoning parser reasoning arrives as <think> content"},
	{Name: "llamacpp", Title: "llama.cpp server (local)", BaseURL: "http://127.0.0.1:8080/v1", ModelNote: "the loaded model's name",
		Notes: "needs --jinja for tool calls; streams reasoning_content with --reasoning-format deepseek"},
	{Name: "lmstudio", Title: "LM Studio (local)", BaseURL: "http://127.0.0.1:1234/v1", ModelNote: "the loaded model's name",
		Notes: "no key; tool calls arrive whole in one delta"},
	{Name: "litellm", Title: "LiteLLM proxy", BaseURL: "http://127.0.0.1:4000/v1", KeyEnv: "LITELLM_API_KEY", ModelNote: "a model_name from the proxy config",
		Notes: "passes the upstream provider's fields through (echoed)"},
}

// Presets returns the known providers, in documentation order.
func Presets() []Preset {
	out := make([]Preset, len(presets))
	copy(out, presets)
	return out
}

// LookupPreset returns the preset named name (case-insensitive).
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Preset{}, false
}

// PresetForURL names the preset whose API host the base URL points at, or
// "" (local servers and unknown hosts).
func PresetForURL(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	for _, p := range presets {
		for _, h := range p.hosts {
			if host == h || strings.HasPrefix(h, ".") && strings.HasSuffix(host, h) {
				return p.Name
			}
		}
	}
	return ""
}
