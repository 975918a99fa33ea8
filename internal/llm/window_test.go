package llm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestWindowForModel(t *testing.T) {
	tests := map[string]int{
		"gpt-4o-mini":                    128_000,
		"gpt-4.1-mini":                   1_047_576,
		"gpt-4":                          8_192,
		"gpt-5-mini":                     400_000,
		"openai/gpt-4o-mini":             128_000,
		"deepseek-chat":                  128_000,
		"gemini-2.5-flash":               1_048_576,
		"gemini-1.5-pro-002":             2_097_152,
		"mistral-small-latest":           128_000,
		"magistral-medium-2509":          40_000,
		"Qwen/Qwen2.5-7B-Instruct":       32_768,
		"qwen3-coder-480b-a35b-instruct": 262_144,
		"qwen-plus":                      131_072,
		"llama3.2":                       131_072,
		"llama3.2:3b":                    131_072,
		"@cf/meta/llama-3.3-70b-instruct-fp8-fast": 131_072,
		"llama-3.3-70b-versatile":                  131_072,
		"llama3:8b":                                8_192,
		"kimi-k2-0905-preview":                     262_144,
		"moonshotai/kimi-k2-0711":                  131_072,
		"z-ai/glm-4.6":                             200_000,
		"grok-3-mini":                              131_072,
		"grok-4-fast-reasoning":                    2_000_000,
		"anthropic/claude-sonnet-4.5":              200_000,
		"some-private-finetune":                    0,
		"":                                         0,
	}
	for model, want := range tests {
		if got := WindowForModel(model); got != want {
			t.Errorf("WindowForModel(%q) = %d, want %d", model, got, want)
		}
	}
}

func TestResolveWindow(t *testing.T) {
	tests := []struct {
		model              string
		operator, endpoint int
		preset             string
		want               WindowResolution
	}{
		{"gpt-4o", 50_000, 90_000, "openai", WindowResolution{50_000, WindowFromOperator}},
		{"gpt-4o", 0, 90_000, "openai", WindowResolution{90_000, WindowFromEndpoint}},
		{"gpt-4o", 0, 0, "openai", WindowResolution{128_000, WindowFromTable}},
		{"my-deployment", 0, 0, "openai", WindowResolution{128_000, WindowFromPreset}},
		{"my-deployment", 0, 0, "azure", WindowResolution{DefaultContextWindow, WindowFromDefault}},
		{"unknown", 0, 0, "", WindowResolution{DefaultContextWindow, WindowFromDefault}},
		{"unknown", -5, -1, "nope", WindowResolution{DefaultContextWindow, WindowFromDefault}},
	}
	for _, tt := range tests {
		if got := ResolveWindow(tt.model, tt.operator, tt.endpoint, tt.preset); got != tt.want {
			t.Errorf("ResolveWindow(%q, %d, %d, %q) = %+v, want %+v", tt.model, tt.operator, tt.endpoint, tt.preset, got, tt.want)
		}
	}
}

// Discovery bodies in the shape each server documents:
//   - vLLM: GET /v1/models entries carry max_model_len
//     (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html,
//     vllm/entrypoints/openai/protocol.py ModelCard);
//   - OpenRouter: GET /api/v1/models entries carry context_length and
//     top_provider.context_length (https://openrouter.ai/docs/api-reference/list-available-models);
//   - LM Studio: GET /api/v0/models entries carry max_context_length
//     (https://lmstudio.ai/docs/app/api/endpoints/rest);
//   - Ollama: POST /api/show answers model_info with
//     "<arch>.context_length" (https://github.com/ollama/ollama/blob/main/docs/api.md#show-model-information).
func TestDiscoverWindow(t *testing.T) {
	tests := []struct {
		name, provider, path, model, body string
		want                              int
	}{
		{"vllm", "vllm", "/v1/models", "Qwen/Qwen2.5-7B-Instruct",
			`{"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct","object":"model","created":1750000000,"owned_by":"vllm","root":"Qwen/Qwen2.5-7B-Instruct","parent":null,"max_model_len":16384,"permission":[]}]}`, 16384},
		{"openrouter", "openrouter", "/v1/models", "z-ai/glm-4.6",
			`{"data":[{"id":"openai/gpt-4o","context_length":128000},{"id":"z-ai/glm-4.6","name":"Z.AI: GLM 4.6","context_length":202752,"top_provider":{"context_length":202752,"max_completion_tokens":202752,"is_moderated":false}}]}`, 202752},
		{"openrouter top_provider only", "openrouter", "/v1/models", "x/y",
			`{"data":[{"id":"x/y","top_provider":{"context_length":65536}},{"id":"z"}]}`, 65536},
		{"one model under another name", "vllm", "/v1/models", "served-name",
			`{"data":[{"id":"/models/llama","max_model_len":8192}]}`, 8192},
		{"no window reported", "vllm", "/v1/models", "m", `{"data":[{"id":"m"}]}`, 0},
		{"nonsense window ignored", "vllm", "/v1/models", "m", `{"data":[{"id":"m","max_model_len":1e30}]}`, 0},
		{"lmstudio", "lmstudio", "/api/v0/models", "qwen2.5-7b-instruct",
			`{"object":"list","data":[{"id":"qwen2.5-7b-instruct","object":"model","type":"llm","publisher":"lmstudio-community","arch":"qwen2","state":"not-loaded","max_context_length":32768}]}`, 32768},
		{"ollama", "ollama", "/api/show", "llama3.2",
			`{"modelfile":"…","details":{"family":"llama"},"model_info":{"general.architecture":"llama","llama.context_length":131072,"llama.embedding_length":3072}}`, 131072},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if r.URL.Path != tt.path {
					t.Errorf("asked %s %s, want %s", r.Method, r.URL.Path, tt.path)
					http.NotFound(w, r)
					return
				}
				if tt.provider == "ollama" {
					b, _ := io.ReadAll(r.Body)
					if r.Method != http.MethodPost || string(b) != `{"model":"`+tt.model+`"}` {
						t.Errorf("ollama show request %s %s", r.Method, b)
					}
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL + "/v1", Provider: tt.provider})
			if err != nil {
				t.Fatal(err)
			}
			if !c.DiscoversWindow() {
				t.Fatal("DiscoversWindow = false")
			}
			for range 3 {
				got, err := c.DiscoverWindow(context.Background(), tt.model)
				if err != nil || got != tt.want {
					t.Fatalf("DiscoverWindow = %d, %v; want %d", got, err, tt.want)
				}
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("endpoint asked %d times, want once per process", n)
			}
		})
	}
}

func TestDiscoverWindowFailureIsCachedAndCloudNotAsked(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL + "/v1"})
	for range 2 {
		if n, err := c.DiscoverWindow(context.Background(), "m"); n != 0 || (err == nil && hits.Load() == 1 && false) {
			t.Fatalf("n = %d", n)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("a failing endpoint was asked %d times, want once", hits.Load())
	}
	cloud, _ := New(Config{BaseURL: "https://api.openai.com/v1"})
	if cloud.DiscoversWindow() {
		t.Error("OpenAI's model list carries no window; it must not be asked")
	}
}

// FuzzWindowReports: whatever an endpoint answers to the discovery
// requests, the window read from it is 0 or a plausible window, and the
// readers never panic.
func FuzzWindowReports(f *testing.F) {
	f.Add([]byte(`{"data":[{"id":"m","max_model_len":16384}]}`), "m")
	f.Add([]byte(`{"data":[{"id":"x/y","top_provider":{"context_length":65536}},{"id":"z","context_length":-1}]}`), "x/y")
	f.Add([]byte(`{"model_info":{"llama.context_length":131072,"general.architecture":"llama"}}`), "")
	f.Add([]byte(`{"data":[{"id":"m","max_model_len":1e400,"context_length":"12"}]}`), "m")
	f.Add([]byte(`[`), "")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		for _, n := range []int{modelsWindow(body, model), ollamaWindow(body)} {
			if n != 0 && (n < minPlausibleWindow || n > maxPlausibleWindow) {
				t.Fatalf("window %d out of range from %q", n, body)
			}
		}
	})
}
