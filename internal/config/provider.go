package config

import (
	"os"
	"strings"

	"github.com/odekrun/odek/internal/llm"
)

// presetKeys reads the key variables of the provider presets
// (DEEPSEEK_API_KEY, GEMINI_API_KEY, …) from environ (nil: the process
// environment); unset and empty ones are left out.
func presetKeys(environ []string) map[string]string {
	keys := map[string]string{}
	for _, p := range llm.Presets() {
		if p.KeyEnv == "" {
			continue
		}
		var v string
		if environ == nil {
			v = os.Getenv(p.KeyEnv)
		} else {
			v, _ = lookup(environ, p.KeyEnv)
		}
		if v != "" {
			keys[p.KeyEnv] = v
		}
	}
	return keys
}

// presetKeyEnv is the key variable of the named preset, "" for none.
func presetKeyEnv(provider string) string {
	p, _ := llm.LookupPreset(provider)
	return p.KeyEnv
}

// openAIKeyApplies reports whether OPENAI_API_KEY may be sent to the
// provider: only to OpenAI itself (or when no provider is named, where it
// has always been the fallback). An OpenAI key is never sent to DeepSeek
// because ODEK_PROVIDER says deepseek.
func openAIKeyApplies(provider string) bool {
	return provider == "" || strings.EqualFold(provider, "openai")
}

// applyProvider validates Config.Provider and fills what the preset
// provides and the layers left unset: the base URL (an error when the
// preset's depends on the account) and the model.
func applyProvider(c *Config) error {
	if c.Provider == "" {
		return nil
	}
	where := sourceName(c.Sources["provider"])
	p, ok := llm.LookupPreset(c.Provider)
	if !ok {
		var names []string
		for _, p := range llm.Presets() {
			names = append(names, p.Name)
		}
		return invalidf(where, "provider", "unknown provider %q; known providers: %s", c.Provider, strings.Join(names, ", "))
	}
	c.Provider = p.Name
	if c.BaseURL == "" {
		if strings.Contains(p.BaseURL, "{") {
			return invalidf(where, "base_url", "provider %q has no fixed base URL: set ODEK_BASE_URL (or base_url) to yours, of the form %s", p.Name, p.BaseURL)
		}
		c.BaseURL = p.BaseURL
		c.Sources["base_url"] = SourceProvider
	}
	if c.Model == "" && p.Model != "" {
		c.Model = p.Model
		c.Sources["model"] = SourceProvider
	}
	return nil
}
