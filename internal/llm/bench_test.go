package llm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// benchConversation is an agent-like request: a system prompt, a few tool
// round trips with sizeable tool output, and three tool declarations.
func benchConversation() llm.Request {
	req := llm.Request{Model: "bench-model", Tools: []llm.ToolSpec{weatherTool, weatherTool, weatherTool}}
	req.Tools[1].Function.Name, req.Tools[2].Function.Name = "read_file", "shell"
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleSystem, Content: strings.Repeat("You are a careful agent. ", 40)},
		llm.Message{Role: llm.RoleUser, Content: "Summarise the repository."})
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Type: "function",
				Function: llm.FunctionCall{Name: "read_file", Arguments: `{"path":"README.md"}`}}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: strings.Repeat("line of \"file\" content\n", 80)})
	}
	return req
}

func benchComplete(b *testing.B, stream bool) {
	turn := llmtest.Turn{Content: strings.Repeat("answer text ", 40), ChunkSize: 6,
		ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"internal/llm/client.go","max_bytes":65536}`}}}
	srv := llmtest.NewHandler(b, func(llmtest.Recorded) llmtest.Turn { return turn })
	c, err := llm.New(llm.Config{BaseURL: srv.URL, DisableStreaming: !stream})
	if err != nil {
		b.Fatal(err)
	}
	req := benchConversation()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Complete(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Message.ToolCalls) != 1 {
			b.Fatalf("message = %+v", res.Message)
		}
	}
}

// BenchmarkComplete measures whole calls against the loopback fake (the
// fake server's own CPU is included, since it runs in-process).
func BenchmarkComplete(b *testing.B) {
	b.Run("stream", func(b *testing.B) { benchComplete(b, true) })
	b.Run("json", func(b *testing.B) { benchComplete(b, false) })
}
