package host

import (
	"context"
	"fmt"
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

// digestModel answers the compaction side call with a digest that repeats
// what the conversation showed it, the endpoint's key included.
type digestModel struct{ say string }

func (d digestModel) Complete(context.Context, agent.Request) (*agent.Response, error) {
	return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: d.say}}, nil
}

// A digest written outside a run (odek session compact, the bot's
// /compact) is masked like a run's saved session: the key the model
// repeats in it never reaches the store.
func TestCompactMasksTheDigest(t *testing.T) {
	const key = "sk-compact-0123456789abcdef"
	var msgs []agent.Message
	msgs = append(msgs, agent.Message{Role: agent.RoleUser, Content: "the goal"})
	for i := range 6 {
		msgs = append(msgs,
			agent.Message{Role: agent.RoleUser, Content: fmt.Sprintf("message %d", i)},
			agent.Message{Role: agent.RoleAssistant, Content: fmt.Sprintf("answer %d", i)})
	}
	out, _, err := Compact(context.Background(), digestModel{say: "facts: the key is " + key}, "m", msgs, 2, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range out {
		if strings.Contains(m.Content, key) {
			t.Fatalf("digest keeps the key: %q", m.Content)
		}
		found = found || strings.Contains(m.Content, "facts: the key is")
	}
	if !found {
		t.Fatalf("no digest in %+v", out)
	}
}
