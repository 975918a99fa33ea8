package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/events/eventstest"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/tools"
)

// chatModel answers the digest side call with a digest that carries every
// "FACT" line it was shown, and a normal request with tool calls for
// steps iterations, then an answer.
func chatModel(steps int, failDigest bool) func(llmtest.Recorded) llmtest.Turn {
	var mu sync.Mutex
	n := 0 // normal requests
	return func(r llmtest.Recorded) llmtest.Turn {
		if len(r.Messages) > 0 && r.Messages[0].Content == agent.DigestPrompt {
			if failDigest {
				return llmtest.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "no digest today"}
			}
			if len(r.Tools) != 0 || len(r.Messages) != 2 {
				return llmtest.Turn{Status: 400, ErrorMessage: "the side call must be a plain two-message request"}
			}
			var facts []string
			for _, line := range strings.Split(r.Messages[1].Content, "\n") {
				if i := strings.Index(line, "FACT"); i >= 0 {
					facts = append(facts, line[i:])
				}
			}
			return llmtest.Reply("## Facts\n" + strings.Join(facts, "\n"))
		}
		mu.Lock()
		n++
		done := n%(steps+1) == 0
		mu.Unlock()
		if done {
			return llmtest.Reply("done")
		}
		return llmtest.CallTools(llmtest.Call{Name: "big", Arguments: `{}`})
	}
}

func bigTool() *fakeTool {
	return &fakeTool{name: "big", class: tools.ClassSafe, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: strings.Repeat("x", 8<<10)}, nil
	}}
}

// TestCompactionKeepsTheDigestAndTheCache runs a conversation of several
// messages through Run with a 16k window: the history is folded into a
// digest right after the system prompt and the goal, the fact of the
// first message reaches later requests through it, the side call's tokens
// count against the budget, and between compactions each request starts
// with the previous one's messages.
func TestCompactionKeepsTheDigestAndTheCache(t *testing.T) {
	srv := llmtest.NewHandler(t, chatModel(2, false))
	tracker := budget.NewTracker(budget.Limits{}, budget.Prices{}, false, time.Now())
	var history []agent.Message
	var evs []events.Event
	for i := range 8 {
		sink := &jsonlSink{}
		goal := "message " + string(rune('A'+i))
		if i == 1 { // not the first message: that one stays verbatim as the goal
			goal = "FACT: my cat is called Zorro"
		}
		res, err := agent.Run(context.Background(), agent.Config{
			LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{bigTool()}, History: history,
			ContextWindow: 16_000, Budget: tracker, EventSink: sink,
		}, goal)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		history = res.Messages
		evs = append(evs, sink.validate(t, eventstest.Options{})...)
	}
	compactions, sideIn := 0, 0
	for _, e := range evs {
		if e.Type == events.ContextCompacted {
			compactions++
			var d events.ContextCompactedData
			d.Decode(e.Data)
			if d.FoldedGroups == 0 || d.AfterTokens >= d.BeforeTokens || d.SideCallInputTokens == 0 {
				t.Errorf("compaction event %+v", d)
			}
			sideIn += d.SideCallInputTokens
		}
		if e.Type == events.ContextTrimmed {
			t.Errorf("trimmed instead of compacted: %v", e.Data)
		}
	}
	if compactions == 0 {
		t.Fatal("no compaction in a conversation far over the window")
	}
	// The digest sits after the goal and carries the first message's fact.
	if history[0].Content != "message A" || !agent.IsDigest(&history[1]) ||
		!strings.Contains(history[1].Content, "Zorro") {
		t.Fatalf("history head %q / %q", history[0].Content, history[1].Content)
	}
	// The side calls were paid from the budget: the tracker saw more input
	// than the normal calls' requests.
	if got := tracker.Snapshot().InputTokens; sideIn == 0 || got < sideIn {
		t.Errorf("budget input %d, side calls %d", got, sideIn)
	}
	// Append-only between compactions: each request that followed no
	// compaction starts with the previous request's messages (plan-free
	// run: no trailing system message).
	var prev []string
	breaks := 0
	for _, r := range srv.Requests() {
		if r.Messages[0].Content == agent.DigestPrompt {
			continue
		}
		cur := make([]string, len(r.Messages))
		for i, m := range r.Messages {
			b, _ := json.Marshal(m)
			cur[i] = string(b)
		}
		if len(prev) > 0 && (len(cur) < len(prev) || strings.Join(cur[:len(prev)], "\n") != strings.Join(prev, "\n")) {
			breaks++
		}
		prev = cur
	}
	if breaks > compactions {
		t.Errorf("%d prefix breaks for %d compactions: the history was rewritten between compactions", breaks, compactions)
	}
}

// TestCompactionFallsBackToTrimming: a failing side call drops the oldest
// groups with a note (context_trimmed) and the run goes on.
func TestCompactionFallsBackToTrimming(t *testing.T) {
	srv := llmtest.NewHandler(t, chatModel(12, true))
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{bigTool()}, ContextWindow: 16_000, EventSink: sink,
	}, "go")
	if err != nil || res.Answer != "done" {
		t.Fatalf("res %+v err %v", res, err)
	}
	trimmed := false
	for _, e := range sink.validate(t, eventstest.Options{}) {
		if e.Type == events.ContextTrimmed && e.Data["mode"] == "proactive" {
			trimmed = true
		}
		if e.Type == events.ContextCompacted {
			t.Error("compacted although the side call failed")
		}
	}
	if !trimmed {
		t.Fatal("no fallback trimming")
	}
}
