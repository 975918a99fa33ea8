package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
)

// OnStart runs after run_started and before the first model call, and its
// error ends the run without one; OnEnd runs once, before the closing
// event, with the answer and the run's error; both write into the run's
// stream through their CallInfo.
func TestLifecycleCallbacks(t *testing.T) {
	var mu sync.Mutex
	var types []events.Type
	sink := events.SinkFunc(func(ev *events.Event) error {
		mu.Lock()
		types = append(types, ev.Type)
		mu.Unlock()
		return nil
	})
	refused := errors.New("refused by policy")
	for _, tc := range []struct {
		name     string
		startErr error
		want     []events.Type
	}{
		{"allowed", nil, []events.Type{events.RunStarted, "start_hook", events.IterationCompleted, "end_hook", events.RunCompleted}},
		{"refused", refused, []events.Type{events.RunStarted, "start_hook", "end_hook", events.RunFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			types = nil
			mu.Unlock()
			model := &scripted{turns: []scriptedTurn{{msg: llm.Message{Role: llm.RoleAssistant, Content: "the answer"}}}}
			var ends int
			var endAnswer string
			var endErr error
			cfg := agent.Config{Model: "m", LLM: model, EventSink: sink,
				OnStart: func(ctx context.Context, call agent.CallInfo, goal string) error {
					if goal != "the goal" || call.RunID == "" {
						t.Errorf("OnStart(%q, run %q)", goal, call.RunID)
					}
					call.Emit("start_hook", map[string]any{})
					return tc.startErr
				},
				OnEnd: func(ctx context.Context, call agent.CallInfo, answer string, err error) {
					ends++
					endAnswer, endErr = answer, err
					call.Emit("end_hook", map[string]any{})
				},
			}
			res, err := agent.Run(context.Background(), cfg, "the goal")
			if !errors.Is(err, tc.startErr) || (tc.startErr == nil && err != nil) {
				t.Fatalf("Run: %v", err)
			}
			if ends != 1 || !errors.Is(endErr, tc.startErr) {
				t.Fatalf("OnEnd called %d times with %v", ends, endErr)
			}
			if tc.startErr != nil && (len(model.turns) != 1 || res.Iterations != 0) {
				t.Fatalf("the model was called after OnStart refused (%d turns left, %d iterations)", len(model.turns), res.Iterations)
			}
			if tc.startErr == nil && endAnswer != "the answer" {
				t.Fatalf("OnEnd answer %q", endAnswer)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(types) != len(tc.want) {
				t.Fatalf("stream %v, want %v", types, tc.want)
			}
			for i := range types {
				if types[i] != tc.want[i] {
					t.Fatalf("stream %v, want %v", types, tc.want)
				}
			}
		})
	}
}
