package agent_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
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

type versionedPlan struct{ v atomic.Int64 }

func (p *versionedPlan) Block() string {
	if p.v.Load() == 0 {
		return ""
	}
	return "[odek plan v" + string(rune('0'+p.v.Load())) + "]"
}

// TestPlanBlockRidesEveryRequest: the block is the last message of every
// request once a plan exists, is never stored in the transcript, and tools
// can emit run events and reach the budget through CallFrom.
func TestPlanBlockRidesEveryRequest(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "p1", Name: "planner", Arguments: `{}`}),
		llmtest.CallTools(llmtest.Call{ID: "p2", Name: "planner", Arguments: `{}`}),
		llmtest.Reply("done"),
	)
	pv := &versionedPlan{}
	tracker := budget.NewTracker(budget.Limits{}, budget.Prices{}, false, time.Now())
	var sawBudget atomic.Bool
	planner := &fakeTool{name: "planner", class: tools.ClassSafe, run: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
		ci, ok := agent.CallFrom(ctx)
		if ok && ci.Budget == tracker && ci.Tool == "planner" && ci.RunID != "" {
			sawBudget.Store(true)
		}
		v := pv.v.Add(1)
		agent.Emit(ctx, events.PlanUpdated, map[string]any{"steps": 1, "done": 0, "in_progress": 1, "blocked": 0, "pending": 0, "version": int(v)})
		return tools.Result{Text: "ok"}, nil
	}}
	sink := &jsonlSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM: newClient(t, srv.URL), Model: "m", Tools: []tools.Tool{planner},
		Plan: pv, EventSink: sink, Budget: tracker,
	}, "goal")
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if last := reqs[0].LastMessage(); last.Role != llm.RoleUser {
		t.Errorf("request 1 carries a plan before any exists: %+v", last)
	}
	for i, want := range []string{"", "[odek plan v1]", "[odek plan v2]"} {
		if i == 0 {
			continue
		}
		last := reqs[i].LastMessage()
		if last.Role != llm.RoleSystem || last.Content != want {
			t.Errorf("request %d last message %+v, want system %q", i+1, last, want)
		}
	}
	for _, m := range res.Messages {
		if m.Role == llm.RoleSystem {
			t.Errorf("plan block stored in the transcript: %+v", m)
		}
	}
	if !sawBudget.Load() {
		t.Error("CallFrom did not carry run id, tool name and budget")
	}
	evs := sink.validate(t, eventstest.Options{})
	n := 0
	for _, e := range evs {
		if e.Type == events.PlanUpdated {
			n++
			if e.Iteration != 0 || e.Tool != "" {
				t.Errorf("plan event carries iteration/tool: %+v", e)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d plan_updated events, want 2: %s", n, types(evs))
	}
}
