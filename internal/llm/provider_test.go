package llm

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestPresetForURL(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://api.deepseek.com", "deepseek"},
		{"https://API.DeepSeek.com/v1", "deepseek"},
		{"https://generativelanguage.googleapis.com/v1beta/openai", "gemini"},
		{"https://api.groq.com/openai/v1", "groq"},
		{"https://myres.openai.azure.com/openai/v1", "azure"},
		{"https://openai.azure.com.evil.test/v1", ""},
		{"https://api.mistral.ai/v1", "mistral"},
		{"https://api.mistral.ai.evil.test/v1", ""},
		{"http://127.0.0.1:11434/v1", ""},
		{"::bad", ""},
	} {
		if got := PresetForURL(tt.url); got != tt.want {
			t.Errorf("PresetForURL(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestPresetsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Presets() {
		if p.Name == "" || p.Name != strings.ToLower(p.Name) || seen[p.Name] {
			t.Errorf("preset name %q empty, not lower case or repeated", p.Name)
		}
		seen[p.Name] = true
		if p.Title == "" || p.BaseURL == "" || p.Notes == "" || (p.Model == "") == (p.ModelNote == "") {
			t.Errorf("preset %q incomplete: %+v", p.Name, p)
		}
		if _, err := endpointURL(strings.NewReplacer("{resource}", "r", "{account_id}", "a").Replace(p.BaseURL)); err != nil {
			t.Errorf("preset %q base URL: %v", p.Name, err)
		}
		if got, ok := LookupPreset(strings.ToUpper(p.Name)); !ok || got.Name != p.Name {
			t.Errorf("LookupPreset(%q) = %+v, %v", strings.ToUpper(p.Name), got, ok)
		}
	}
	if _, ok := LookupPreset("nope"); ok {
		t.Error("unknown preset found")
	}
}

// The endpoint quirks change what is sent, each for its own provider only.
func TestPresetQuirksInRequest(t *testing.T) {
	msgs := []Message{{Role: RoleUser, Content: "hi"}, {Role: RoleAssistant, Content: "", Extra: json.RawMessage(`{"reasoning":"r","reasoning_content":"rc","keep":1}`),
		ToolCalls: []ToolCall{{ID: "abcdefghi", Function: FunctionCall{Name: "f", Arguments: "{}"}, Extra: json.RawMessage(`{"callmeta":2}`)}}},
		{Role: RoleTool, ToolCallID: "abcdefghi", Content: "ok"}}
	tools := []ToolSpec{{Function: FunctionSpec{Name: "f", Parameters: json.RawMessage(`{"$schema":"x","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`)}}}
	body := func(provider string, strict []string) string {
		c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Provider: provider, StrictToolModels: strict})
		if err != nil {
			t.Fatal(err)
		}
		b, err := encodeRequest(&Request{Model: "m", Messages: msgs, Tools: tools}, true, nil, nil, c.schema)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plain := body("", nil)
	for _, want := range []string{`"reasoning":"r"`, `"reasoning_content":"rc"`, `"stream_options"`, `"$ref"`, `"type":"object"`} {
		if !strings.Contains(plain, want) {
			t.Errorf("no quirks: body lacks %s: %s", want, plain)
		}
	}
	if strings.Contains(plain, `"strict"`) {
		t.Errorf("strict sent without opting in: %s", plain)
	}
	if !strings.Contains(plain, `"keep":1`) || !strings.Contains(plain, `"callmeta":2`) {
		t.Errorf("no quirks: unknown field not echoed: %s", plain)
	}
	// Groq and Mistral refuse undocumented fields and need none back.
	if g := body("groq", nil); strings.Contains(g, `"reasoning"`) || strings.Contains(g, `reasoning_content`) || strings.Contains(g, `"keep"`) || strings.Contains(g, `"callmeta"`) {
		t.Errorf("groq: %s", g)
	}
	if m := body("mistral", nil); strings.Contains(m, "stream_options") || !strings.Contains(m, `"stream":true`) || strings.Contains(m, `"keep"`) || strings.Contains(m, `"callmeta"`) {
		t.Errorf("mistral: %s", m)
	}
	if g := body("gemini", nil); strings.Contains(g, "$ref") || strings.Contains(g, "$schema") || strings.Contains(g, "$defs") {
		t.Errorf("gemini: %s", g)
	}
	if s := body("openai", []string{"m"}); !strings.Contains(s, `"strict":true`) || !strings.Contains(s, `"additionalProperties":false`) {
		t.Errorf("strict opt-in: %s", s)
	}
	if s := body("openai", []string{"other-model"}); strings.Contains(s, `"strict"`) {
		t.Errorf("strict for another model: %s", s)
	}
}

// docs/PROVIDERS.md documents every preset with its base URL and key.
func TestProvidersDocListsEveryPreset(t *testing.T) {
	doc, err := os.ReadFile("../../docs/PROVIDERS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Presets() {
		row := "| `" + p.Name + "` | " + p.Title + " | `" + p.BaseURL + "` |"
		if !strings.Contains(string(doc), row) || (p.KeyEnv != "" && !strings.Contains(string(doc), "`"+p.KeyEnv+"`")) {
			t.Errorf("docs/PROVIDERS.md has no row %q (with %s)", row, p.KeyEnv)
		}
	}
}
