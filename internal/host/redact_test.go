package host

import (
	"strings"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/redact"
)

func TestRedactMessagesCopiesOnlyWhatChanges(t *testing.T) {
	const key = "sk-test-0123456789abcdefXYZ"
	red := redact.New()
	red.AddValue(key)
	msgs := []agent.Message{
		{Role: "user", Content: "hello"},
		{Role: "assistant", ToolCalls: []agent.ToolCall{{ID: "1", Function: agent.FunctionCall{Name: "shell", Arguments: `{"command":"echo ` + key + `"}`}}}},
		{Role: "tool", ToolCallID: "1", Content: key},
	}
	out := redactMessages(red, msgs)
	if strings.Contains(out[1].ToolCalls[0].Function.Arguments, key) || strings.Contains(out[2].Content, key) || out[0].Content != "hello" {
		t.Fatalf("not masked: %+v", out)
	}
	if !strings.Contains(msgs[1].ToolCalls[0].Function.Arguments, key) || msgs[2].Content != key {
		t.Fatal("the run's own messages were modified")
	}
	clean := msgs[:1]
	if got := redactMessages(red, clean); &got[0] != &clean[0] {
		t.Fatal("a clean history was copied")
	}
}
