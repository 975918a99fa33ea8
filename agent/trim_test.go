package agent

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// randomTranscript builds [system, goal, groups...] with tool-call groups
// of 1–3 results, plain assistant and user messages, of random sizes.
func randomTranscript(r *rand.Rand) []Message {
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "goal"}}
	for g := 0; g < r.IntN(40); g++ {
		switch r.IntN(3) {
		case 0:
			n := 1 + r.IntN(3)
			a := Message{Role: RoleAssistant}
			var results []Message
			for k := 0; k < n; k++ {
				id := "g" + strconv.Itoa(g) + "c" + strconv.Itoa(k)
				a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: "t", Arguments: "{}"}})
				results = append(results, Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("r", r.IntN(20000))})
			}
			msgs = append(msgs, a)
			msgs = append(msgs, results...)
		case 1:
			msgs = append(msgs, Message{Role: RoleAssistant, Content: strings.Repeat("a", r.IntN(2000))})
		default:
			msgs = append(msgs, Message{Role: RoleUser, Content: strings.Repeat("u", r.IntN(2000))})
		}
	}
	return msgs
}

// checkPaired fails if a tool result lacks its call or a call its result.
func checkPaired(t *testing.T, msgs []Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == RoleTool {
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: orphan tool result %q", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			t.Fatalf("message %d: tool calls left unanswered: %v", i, open)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		t.Fatalf("unanswered at end: %v", open)
	}
	if msgs[0].Role != RoleSystem || msgs[1].Content != "goal" {
		t.Fatalf("head not kept: %+v", msgs[:2])
	}
}

func TestTrimNeverOrphans(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		msgs := randomTranscript(r)
		budget := r.IntN(20000)
		out, dropped := trimProactive(msgs, budget, 2)
		checkPaired(t, out)
		if dropped > 0 && estimateAll(out) > budget && len(groupStarts(out, anchorEnd(out)+1)) > 2 {
			t.Fatalf("proactive left %d tokens > %d with more than 2 groups", estimateAll(out), budget)
		}
		sout, _, _ := trimSurvival(msgs)
		checkPaired(t, sout)
		if len(msgs) > 0 && msgs[len(msgs)-1].Content != sout[len(sout)-1].Content && len(msgs[len(msgs)-1].Content) <= survivalResultBytes {
			t.Fatal("survival dropped the newest message")
		}
	}
}

func TestTrimProactiveDropsOldestAndNotes(t *testing.T) {
	msgs := []Message{{Role: RoleSystem, Content: "s"}, {Role: RoleUser, Content: "goal"}}
	for i := 0; i < 10; i++ {
		msgs = append(msgs, Message{Role: RoleAssistant, Content: strings.Repeat("x", 400) + strconv.Itoa(i)})
	}
	out, dropped := trimProactive(msgs, 400, 2)
	if dropped != 7 || len(out) != 6 || !strings.Contains(out[2].Content, "7 earlier message groups") || !strings.HasSuffix(out[3].Content, "7") || estimateAll(out) > 400 {
		t.Fatalf("dropped %d, out %d: %+v", dropped, len(out), out[2])
	}
	if same, d := trimProactive(msgs, 1<<20, 2); d != 0 || len(same) != len(msgs) {
		t.Fatal("trimmed a transcript that fits")
	}
}

func TestKeepRecent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 500; i++ {
		full := randomTranscript(r)
		keep := r.IntN(5)
		out, dropped := KeepRecent(full[1:], keep)
		checkPaired(t, append([]Message{full[0]}, out...))
		if got := len(groupStarts(out, 2)); dropped > 0 && got != keep {
			t.Fatalf("kept %d groups, want %d", got, keep)
		}
	}
}

// BenchmarkTrim2000 measures proactive and survival trimming of a
// 2,000-message transcript.
func BenchmarkTrim2000(b *testing.B) {
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "goal"}}
	for len(msgs) < 2000 {
		id := "c" + strconv.Itoa(len(msgs))
		msgs = append(msgs,
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Function: FunctionCall{Name: "read_file", Arguments: `{"path":"x.go"}`}}}},
			Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("line of code\n", 80)})
	}
	budget := estimateAll(msgs) / 2
	b.Run("proactive", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			trimProactive(msgs, budget, 2)
		}
	})
	b.Run("survival", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			trimSurvival(msgs)
		}
	})
}
