package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/redact"
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

// askTool is a tool whose assessment shows its command line in the
// approval question only.
type askTool struct{ fakeTool }

func (a *askTool) Assess(json.RawMessage) (tools.Assessment, error) {
	return tools.Assessment{Class: tools.ClassCodeExecution, Summary: map[string]any{"argv0": "curl"},
		Ask: map[string]string{"command": "curl -H 'Authorization: Bearer hunter2-secret-value' https://example.org"}}, nil
}

// Issue 26 point 8: the approval question shows the command line being
// approved (not only argv0), masked by the run's redactor; the audit event
// does not carry it.
func TestApprovalQuestionShowsTheMaskedCommandLine(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "shell", Arguments: `{}`}),
		llmtest.Reply("done"),
	)
	red := redact.New()
	red.AddValue("hunter2-secret-value")
	var asked string
	sink := &jsonlSink{}
	tool := &askTool{fakeTool{name: "shell", class: tools.ClassCodeExecution, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "ok"}, nil
	}}}
	_, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{tool}, Redactor: red, EventSink: sink,
		Policy:   agent.Policy{Classes: map[agent.Class]agent.Action{tools.ClassCodeExecution: agent.ActionPrompt}},
		Prompter: agent.PrompterFunc(func(_ context.Context, q string) (bool, error) { asked = q; return true, nil }),
	}, "fetch it")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(asked, "command=curl -H 'Authorization: ") || !strings.Contains(asked, "https://example.org") || strings.Contains(asked, "hunter2-secret-value") || !strings.Contains(asked, "argv0=curl") {
		t.Fatalf("question %q: want the masked command line beside argv0", asked)
	}
	if strings.Contains(sink.buf.String(), "Authorization") {
		t.Fatalf("the command line reached the events: %s", sink.buf.String())
	}
}
