package agent

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// withMetadata gives every assistant tool-call message of msgs provider
// metadata (DeepSeek reasoning_content on the message, a Gemini thought
// signature on its first call), as a real thinking run has.
func withMetadata(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 {
			m.Extra = json.RawMessage(`{"reasoning_content":"` + strings.Repeat("why ", 200) + `"}`)
			m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
			m.ToolCalls[0].Extra = json.RawMessage(`{"extra_content":{"google":{"thought_signature":"sig-` + m.ToolCalls[0].ID + `"}}}`)
		}
		out[i] = m
	}
	return out
}

// checkMetadataKept fails unless every assistant message with tool calls
// in out is one of in's, metadata included, followed by its results.
func checkMetadataKept(t *testing.T, in, out []Message) {
	t.Helper()
	byID := map[string]Message{}
	for _, m := range in {
		if len(m.ToolCalls) > 0 {
			byID[m.ToolCalls[0].ID] = m
		}
	}
	for i, m := range out {
		if len(m.ToolCalls) == 0 {
			continue
		}
		orig, ok := byID[m.ToolCalls[0].ID]
		if !ok || !reflect.DeepEqual(orig, m) {
			t.Fatalf("message %d lost or changed its provider metadata:\n got %+v\nwant %+v", i, m, orig)
		}
		for k := range m.ToolCalls {
			if i+1+k >= len(out) || out[i+1+k].ToolCallID != m.ToolCalls[k].ID {
				t.Fatalf("message %d: call %s is not followed by its result", i, m.ToolCalls[k].ID)
			}
		}
	}
}

// Trimming drops whole groups: a tool call never loses its metadata and
// never travels without its results, in every trimming mode.
func TestTrimKeepsProviderMetadata(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		in := withMetadata(randomTranscript(r))
		out, _ := trimProactive(in, 2000+r.IntN(20000), 1+r.IntN(3))
		checkMetadataKept(t, in, out)
		checkPaired(t, out)
		out, _, _ = trimSurvival(in)
		checkMetadataKept(t, in, out)
		checkPaired(t, out)
		kept, _ := KeepRecent(in[1:], r.IntN(5))
		checkMetadataKept(t, in, kept)
	}
}

// The metadata is sent with every request, so it counts toward the
// estimate that decides when to trim.
func TestEstimateCountsMetadata(t *testing.T) {
	m := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Function: FunctionCall{Name: "f", Arguments: "{}"}}}}
	bare := estimateTokens(&m)
	m.Extra = json.RawMessage(`{"reasoning_content":"` + strings.Repeat("x", 4000) + `"}`)
	m.ToolCalls[0].Extra = json.RawMessage(`{"extra_content":{"google":{"thought_signature":"` + strings.Repeat("s", 400) + `"}}}`)
	if got := estimateTokens(&m); got < bare+1100 {
		t.Fatalf("estimate with 4.4 KB of metadata = %d tokens, without %d", got, bare)
	}
}
