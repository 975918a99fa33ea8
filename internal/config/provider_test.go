package config

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestProviderPreset(t *testing.T) {
	tests := []struct {
		name              string
		operator, project string
		env               []string
		base, model, key  string
		provider          string
		errField          string // an *Error on this field
		warnField         string
	}{
		{name: "env preset with its key variable", env: []string{"ODEK_PROVIDER=deepseek", "DEEPSEEK_API_KEY=ds-key"},
			base: "https://api.deepseek.com", model: "deepseek-chat", key: "ds-key", provider: "deepseek"},
		{name: "preset name is case-insensitive", env: []string{"ODEK_PROVIDER=Gemini", "GEMINI_API_KEY=g"},
			base: "https://generativelanguage.googleapis.com/v1beta/openai", model: "gemini-2.5-flash", key: "g", provider: "gemini"},
		{name: "an OpenAI key is never sent to another provider", env: []string{"ODEK_PROVIDER=deepseek", "OPENAI_API_KEY=sk-openai"},
			base: "https://api.deepseek.com", model: "deepseek-chat", key: "", provider: "deepseek"},
		{name: "OPENAI_API_KEY still serves the openai preset", env: []string{"ODEK_PROVIDER=openai", "OPENAI_API_KEY=sk-openai"},
			base: "https://api.openai.com/v1", model: "gpt-4o-mini", key: "sk-openai", provider: "openai"},
		{name: "ODEK_API_KEY wins over the preset variable", env: []string{"ODEK_PROVIDER=mistral", "MISTRAL_API_KEY=m", "ODEK_API_KEY=o"},
			base: "https://api.mistral.ai/v1", model: "mistral-small-latest", key: "o", provider: "mistral"},
		{name: "explicit base URL and model win", env: []string{"ODEK_PROVIDER=mistral", "ODEK_BASE_URL=http://127.0.0.1:9/v1", "ODEK_MODEL=magistral-small-latest"},
			base: "http://127.0.0.1:9/v1", model: "magistral-small-latest", provider: "mistral"},
		{name: "operator file", operator: `{"provider":"groq"}`, env: []string{"GROQ_API_KEY=gq"},
			base: "https://api.groq.com/openai/v1", model: "llama-3.3-70b-versatile", key: "gq", provider: "groq"},
		{name: "a preset without a model leaves it to ResolveEndpoint", env: []string{"ODEK_PROVIDER=lmstudio"},
			base: "http://127.0.0.1:1234/v1", model: "", provider: "lmstudio"},
		{name: "a project cannot pick the provider", project: `{"provider":"openrouter"}`, env: []string{"OPENAI_API_KEY=sk"},
			base: "", key: "sk", warnField: "provider"},
		{name: "account-specific base URL must be given", env: []string{"ODEK_PROVIDER=azure", "AZURE_OPENAI_API_KEY=a"}, errField: "base_url"},
		{name: "unknown provider", env: []string{"ODEK_PROVIDER=nope"}, errField: "provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dirs(t, tt.operator, tt.project)
			o.Environ = append(env(), tt.env...)
			c, warns, err := Load(o)
			if tt.errField != "" {
				var ce *Error
				if !errors.As(err, &ce) || ce.Field != tt.errField || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want an invalid %s", err, tt.errField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.BaseURL != tt.base || c.Model != tt.model || c.APIKey != tt.key || c.Provider != tt.provider {
				t.Errorf("base %q model %q key %q provider %q, want %q %q %q %q", c.BaseURL, c.Model, c.APIKey, c.Provider, tt.base, tt.model, tt.key, tt.provider)
			}
			var fields []string
			for _, w := range warns {
				fields = append(fields, w.Field)
			}
			if tt.warnField != "" && !strings.Contains(strings.Join(fields, " "), tt.warnField) {
				t.Errorf("warnings %v, want one on %s", warns, tt.warnField)
			}
		})
	}
}

// Without a key, the endpoint check names the preset's variable.
func TestProviderMissingKeyNamesVariable(t *testing.T) {
	o := dirs(t, "", "")
	o.Environ = append(env(), "ODEK_PROVIDER=deepseek", "OPENAI_API_KEY=sk-openai")
	c, _ := mustLoad(t, o)
	err := c.ResolveEndpoint(context.Background(), nil)
	if !errors.Is(err, ErrAPIKeyRequired) || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") || strings.Contains(err.Error(), "sk-openai") {
		t.Fatalf("err = %v", err)
	}
}

func TestStrictToolModels(t *testing.T) {
	c, _ := mustLoad(t, dirs(t, "", `{"llm":{"strict_tool_models":["gpt-4.1"]}}`))
	if !reflect.DeepEqual(c.LLM.StrictToolModels, []string{"gpt-4.1"}) || c.Sources["llm.strict_tool_models"] != SourceProject {
		t.Fatalf("strict_tool_models = %v from %s", c.LLM.StrictToolModels, c.Sources["llm.strict_tool_models"])
	}
}
