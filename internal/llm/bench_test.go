package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
// "stream-replay" serves a recorded fake stream from memory in one write,
// which leaves mostly the client's own cost.
func BenchmarkComplete(b *testing.B) {
	b.Run("stream", func(b *testing.B) { benchComplete(b, true) })
	b.Run("json", func(b *testing.B) { benchComplete(b, false) })
	b.Run("stream-replay", benchReplay)
}

func benchReplay(b *testing.B) {
	// Record one streamed reply of the fake.
	turn := llmtest.Turn{Content: strings.Repeat("answer text ", 40), ChunkSize: 6,
		ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"internal/llm/client.go","max_bytes":65536}`}}}
	fake := llmtest.NewHandler(b, func(llmtest.Recorded) llmtest.Turn { return turn })
	req := benchConversation()
	body, err := json.Marshal(map[string]any{"model": req.Model, "messages": req.Messages, "tools": req.Tools,
		"stream": true, "stream_options": map[string]bool{"include_usage": true}})
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.Post(fake.URL+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	recorded, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("recording: %v %d", err, resp.StatusCode)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(recorded)
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
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
