package agent_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/tools"
)

// A message steered into a run while a tool runs joins the transcript as a
// user message before the next model call — after the tool's result, never
// between the call and its result — and one steered while the model writes
// its final answer makes the run continue so the answer covers it; the
// saved session shows both as user messages (issue 26).
func TestSteeredMessagesJoinAtModelBoundaries(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "echo", Arguments: `{"msg":"x"}`}),
		llmtest.Reply("first answer"),
		llmtest.Reply("answer covering both"),
	)
	var mu sync.Mutex
	var inbox []string
	asked := 0
	steer := func(context.Context) []string {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if asked == 3 { // the check after "first answer"
			inbox = append(inbox, "and z")
		}
		out := inbox
		inbox = nil
		return out
	}
	tool := &fakeTool{name: "echo", class: tools.ClassSafe, run: func(_ context.Context, a json.RawMessage) (tools.Result, error) {
		mu.Lock()
		inbox = append(inbox, "also check y") // the user writes while the tool runs
		mu.Unlock()
		return tools.Result{Text: "echo:" + string(a)}, nil
	}}
	var saved []agent.Message
	res, err := agent.Run(agent.WithSteer(context.Background(), steer), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{tool},
		Persist: func(m []agent.Message) error { saved = append([]agent.Message(nil), m...); return nil },
	}, "check x")
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || res.Answer != "answer covering both" {
		t.Fatalf("%d model calls, answer %q; want 3 and the answer covering both", len(reqs), res.Answer)
	}
	second := reqs[1].Messages
	n := len(second)
	if second[n-2].Role != llm.RoleTool || second[n-1].Role != llm.RoleUser || second[n-1].Content != "also check y" {
		t.Fatalf("second request ends %+v, %+v; want the tool result then the steered message", second[n-2], second[n-1])
	}
	third := reqs[2].Messages
	n = len(third)
	if third[n-2].Content != "first answer" || third[n-1].Role != llm.RoleUser || third[n-1].Content != "and z" {
		t.Fatalf("third request ends %+v, %+v; want the first answer then the message steered while it was written", third[n-2], third[n-1])
	}
	users := 0
	for _, m := range saved {
		if m.Role == agent.RoleUser {
			users++
		}
	}
	if users != 3 {
		t.Fatalf("the saved session has %d user messages, want 3 (goal and two steered): %+v", users, saved)
	}
}
