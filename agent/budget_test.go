package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/events/eventstest"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/tools"
)

func TestBudgetLimits(t *testing.T) {
	twoCalls := llmtest.Turn{Content: "partial thoughts", Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 10},
		ToolCalls: []llmtest.Call{{ID: "a", Name: "echo", Arguments: `{}`}, {ID: "b", Name: "echo", Arguments: `{}`}}}
	cases := []struct {
		name      string
		limits    budget.Limits
		limit     string
		wantCalls int
	}{
		{"tool_calls", budget.Limits{MaxToolCalls: 1}, budget.LimitToolCalls, 1},
		{"input_tokens", budget.Limits{MaxInputTokens: 99}, budget.LimitInputTokens, 0},
		{"output_tokens", budget.Limits{MaxOutputTokens: 9}, budget.LimitOutputTokens, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, twoCalls)
			sink := &jsonlSink{}
			tr := budget.NewTracker(tc.limits, budget.Prices{}, false, time.Now())
			res, err := agent.Run(context.Background(), agent.Config{
				LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{echoTool()}, EventSink: sink, Budget: tr,
			}, "go")
			var ex *budget.ExceededError
			if !errors.As(err, &ex) || ex.Limit != tc.limit {
				t.Fatalf("err = %v, want %s exceeded", err, tc.limit)
			}
			if res.ToolCalls != tc.wantCalls || res.Answer != "partial thoughts" {
				t.Fatalf("tool calls %d answer %q", res.ToolCalls, res.Answer)
			}
			evs := sink.validate(t, eventstest.Options{})
			n := len(evs)
			if evs[n-2].Type != events.BudgetExceeded || evs[n-2].Data["limit_name"] != tc.limit ||
				evs[n-1].Type != events.RunFailed || evs[n-1].Data["error_class"] != "budget_exceeded" {
				t.Fatalf("closing events %+v %+v", evs[n-2], evs[n-1])
			}
		})
	}
}

func TestBudgetRuntimeIsADeadline(t *testing.T) {
	block := &fakeTool{name: "block", class: tools.ClassSafe, run: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	}}
	srv := llmtest.New(t, llmtest.CallTools(llmtest.Call{ID: "x", Name: "block", Arguments: `{}`}))
	sink := &jsonlSink{}
	tr := budget.NewTracker(budget.Limits{MaxRuntime: 200 * time.Millisecond}, budget.Prices{}, false, time.Now())
	_, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{block}, EventSink: sink, Budget: tr,
	}, "go")
	var ex *budget.ExceededError
	if !errors.As(err, &ex) || ex.Limit != budget.LimitRuntime {
		t.Fatalf("err = %v", err)
	}
	evs := sink.validate(t, eventstest.Options{})
	if evs[len(evs)-2].Type != events.BudgetExceeded {
		t.Fatalf("want budget_exceeded before run_failed, got %s", types(evs))
	}
}
