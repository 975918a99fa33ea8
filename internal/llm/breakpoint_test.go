package llm

import (
	"encoding/json"
	"testing"
)

// TestCacheBreakpoints: for a model listed in CacheBreakpointModels the
// system prompt and the last stable message (not the trailing plan) go
// out as a text part marked cache_control ephemeral, the form Anthropic's
// prompt caching takes through OpenRouter
// (https://openrouter.ai/docs/features/prompt-caching#anthropic-claude);
// other models' requests are unchanged.
func TestCacheBreakpoints(t *testing.T) {
	req := Request{Model: "anthropic/claude-sonnet-4.5", Messages: []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "goal"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "t", Arguments: "{}"}}}},
		{Role: RoleTool, ToolCallID: "c1", Content: "result"},
		{Role: RoleSystem, Content: "plan"},
	}}
	type part struct {
		Type         string            `json:"type"`
		Text         string            `json:"text"`
		CacheControl map[string]string `json:"cache_control"`
	}
	decode := func(body []byte) []map[string]json.RawMessage {
		var w struct {
			Messages []map[string]json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		return w.Messages
	}
	var cache msgCache
	for round := range 2 { // the second round meets the message cache
		body, err := encodeRequest(&req, false, &cache, nil, schemaOpts{breakpoints: []string{"anthropic/claude-sonnet-4.5"}})
		if err != nil {
			t.Fatal(err)
		}
		msgs := decode(body)
		for i, want := range map[int]string{0: "sys", 3: "result"} {
			var parts []part
			if err := json.Unmarshal(msgs[i]["content"], &parts); err != nil || len(parts) != 1 || parts[0].Text != want ||
				parts[0].Type != "text" || parts[0].CacheControl["type"] != "ephemeral" {
				t.Errorf("round %d message %d content %s, want one marked text part", round, i, msgs[i]["content"])
			}
		}
		if string(msgs[3]["tool_call_id"]) != `"c1"` {
			t.Errorf("the marked tool message lost its tool_call_id: %s", msgs[3]["tool_call_id"])
		}
		for _, i := range []int{1, 4} {
			if c := string(msgs[i]["content"]); c[0] != '"' {
				t.Errorf("round %d message %d should be plain: %s", round, i, c)
			}
		}
	}
	req.Model = "openai/gpt-4o"
	body, _ := encodeRequest(&req, false, &cache, nil, schemaOpts{breakpoints: []string{"anthropic/claude-sonnet-4.5"}})
	for i, m := range decode(body) {
		if c := string(m["content"]); c != "" && c[0] == '[' {
			t.Errorf("a model not listed got a breakpoint at message %d", i)
		}
	}
}
