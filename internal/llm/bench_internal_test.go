package llm

import (
	"fmt"
	"strings"
	"testing"
)

// realisticStream is an OpenAI-shaped stream of about 200 chunks: a role
// chunk, 80 content deltas, two tool calls whose arguments arrive in 60
// deltas each, the finish chunk, the usage chunk and [DONE].
func realisticStream() (body string, chunks int) {
	var b strings.Builder
	head := `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","usage":null,"choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":null}]}`
	add := func(delta string) {
		b.WriteString("data: ")
		b.WriteString(head)
		b.WriteString(delta)
		b.WriteString(tail)
		b.WriteString("\n\n")
		chunks++
	}
	add(`{"role":"assistant","content":"","refusal":null}`)
	for i := 0; i < 80; i++ {
		add(fmt.Sprintf(`{"content":" word%d,"}`, i))
	}
	for call := 0; call < 2; call++ {
		add(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"write_file","arguments":""}}]}`, call, call))
		for i := 0; i < 59; i++ {
			add(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":"{\"pa\\\"th%d"}}]}`, call, i))
		}
	}
	b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","usage":null,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[],"usage":{"prompt_tokens":1843,"completion_tokens":402,"total_tokens":2245,"prompt_tokens_details":{"cached_tokens":1536,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String(), chunks + 2
}

// BenchmarkReadStream parses and assembles a ~200-chunk stream with
// tool-call deltas (the client's per-answer parsing cost).
func BenchmarkReadStream(b *testing.B) {
	body, chunks := realisticStream()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	r := strings.NewReader(body)
	for b.Loop() {
		r.Reset(body)
		st := getStreamState(r, MaxSSELineBytes, nil, false)
		if err := st.readStream(); err != nil {
			b.Fatal(err)
		}
		m := st.asm.message()
		if len(m.ToolCalls) != 2 {
			b.Fatalf("calls = %d", len(m.ToolCalls))
		}
		putStreamState(st)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(chunks), "ns/chunk")
}

// BenchmarkDecodeChunk decodes one tool-call delta chunk.
func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"path\": \"/"}}]},"logprobs":null,"finish_reason":null}]}`)
	var s scanner
	var v chunkView
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.decodeChunk(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeRequest renders an agent-sized request body (about
// 120 KB of history with tool output) as Complete does once per call:
// "cold" encodes everything, "warm" is the next call of the same agent, one
// message longer, with the earlier messages' encodings cached.
func BenchmarkEncodeRequest(b *testing.B) {
	req := Request{Model: "m", Messages: []Message{{Role: RoleSystem, Content: strings.Repeat("You are careful. ", 60)}}}
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("call_%d", i)
		req.Messages = append(req.Messages,
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "read_file", Arguments: `{"path":"x.go"}`}}}},
			Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("\tfmt.Println(\"line\")\n", 230)})
	}
	body, _ := encodeRequest(&req, true, nil, nil, schemaOpts{})
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeRequest(&req, true, nil, nil, schemaOpts{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		var cache msgCache
		encodeRequest(&req, true, &cache, nil, schemaOpts{})
		next := req
		next.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)],
			Message{Role: RoleUser, Content: strings.Repeat("new ", 200)})
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var dst []byte // the pooled buffer Complete reuses
		for b.Loop() {
			var err error
			if dst, err = encodeRequest(&next, true, &cache, dst, schemaOpts{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeBodyHistory: what encoding costs per call as an agent's
// transcript grows (tool-call/8 KiB-result pairs, warm cache, one new
// message per call as in the loop). With every message encoded once and
// the body sent as segments, the cost per call is a lookup per message,
// not an encoding or a copy of the history.
func BenchmarkEncodeBodyHistory(b *testing.B) {
	result := strings.Repeat("x", 8191) + "\n"
	for _, iters := range []int{50, 200, 500} {
		b.Run(fmt.Sprintf("iterations=%d", iters), func(b *testing.B) {
			req := Request{Model: "m", Messages: []Message{{Role: RoleSystem, Content: strings.Repeat("You are careful. ", 60)}, {Role: RoleUser, Content: "go"}}}
			for i := 0; i < iters; i++ {
				id := fmt.Sprintf("c%d", i)
				req.Messages = append(req.Messages,
					Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Type: "function", Function: FunctionCall{Name: "read_file", Arguments: `{"path":"small.txt"}`}}}},
					Message{Role: RoleTool, ToolCallID: id, Content: strings.Clone(result)})
			}
			var cache msgCache
			encodeBody(&req, true, &cache, nil, schemaOpts{})
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				segs, buf, err := encodeBody(&req, true, &cache, dst, schemaOpts{})
				if err != nil || len(segs) == 0 {
					b.Fatal(err)
				}
				dst = buf
			}
		})
	}
}
