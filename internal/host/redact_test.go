package host

import (
	"context"
	"strings"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/redact"
)

func TestRedactDeltasMasksASecretSplitAcrossDeltas(t *testing.T) {
	const key = "sk-test-0123456789abcdefXYZ"
	red := redact.New()
	red.AddValue(key)
	text := "here it is: " + key + " — done"
	for cut := 0; cut <= len(text); cut++ {
		var got []string
		begins := 0
		ctx := llm.WithDeltaHook(context.Background(), &llm.DeltaHook{Begin: func() { begins++ }, Delta: func(s string) { got = append(got, s) }})
		ctx, flush := redactDeltas(ctx, red)
		h := llm.DeltaHookFrom(ctx)
		h.Begin()
		h.Delta(text[:cut])
		h.Delta(text[cut:])
		flush()
		if all := strings.Join(got, ""); all != red.String(text) || strings.Contains(all, key) || begins != 1 {
			t.Fatalf("cut %d: %q (begins %d)", cut, all, begins)
		}
	}
}

func TestRedactDeltasWithoutHook(t *testing.T) {
	ctx, flush := redactDeltas(context.Background(), redact.New())
	flush()
	if llm.DeltaHookFrom(ctx) != nil {
		t.Fatal("a hook appeared where the caller installed none")
	}
}

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
