package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events/eventstest"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/plan"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// scripted is an in-process model that answers from a fixed list of
// replies (or errors), with fixed usage and timing so the stream is
// deterministic.
type scripted struct {
	mu    sync.Mutex
	turns []scriptedTurn
}

type scriptedTurn struct {
	msg llm.Message
	err error
}

func (s *scripted) Complete(_ context.Context, _ llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.turns) == 0 {
		return nil, errors.New("scripted: no more turns")
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	if t.err != nil {
		return nil, t.err
	}
	return &llm.Response{Message: t.msg, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20},
		Timing: llm.Timing{Duration: 250 * time.Millisecond, TTFT: 50 * time.Millisecond, Generation: 200 * time.Millisecond}}, nil
}

func calls(cs ...llm.ToolCall) scriptedTurn {
	return scriptedTurn{msg: llm.Message{Role: llm.RoleAssistant, ToolCalls: cs}}
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Function: llm.FunctionCall{Name: name, Arguments: args}}
}

// volatile matches the wall-clock fields of a stream; normalize replaces
// their values, keeping every key, its position and its JSON type.
var volatile = regexp.MustCompile(`"(timestamp)":"[^"]*"|"(duration_ms)":[0-9.]+`)

func normalize(b []byte) []byte {
	return volatile.ReplaceAllFunc(b, func(m []byte) []byte {
		if m[1] == 't' {
			return []byte(`"timestamp":"T"`)
		}
		return []byte(`"duration_ms":0`)
	})
}

// TestGoldenStreams pins the odek.event/v1 stream the loop writes, byte
// for byte apart from wall-clock values: payload shapes must not change
// when their Go types do. go test ./agent -update rewrites the files.
func TestGoldenStreams(t *testing.T) {
	red := redact.New()
	red.AddValue("hunter2-secret-value")
	failing := &fakeTool{name: "failing", class: tools.ClassSafe, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "no such thing", IsError: true}, nil
	}}
	broken := &fakeTool{name: "broken", class: tools.ClassSafe, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{}, errors.New("disk on fire")
	}}
	netTool := &fakeTool{name: "fetch", class: tools.ClassNetworkEgress, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "fetched"}, nil
	}}
	arts := &fakeTool{name: "maker", class: tools.ClassLocalWrite, run: func(context.Context, json.RawMessage) (tools.Result, error) {
		return tools.Result{Text: "made hunter2-secret-value", ArtifactCount: 2}, nil
	}}
	tests := []struct {
		name    string
		turns   []scriptedTurn
		cfg     func(*agent.Config)
		wantErr bool
	}{
		{
			name: "completed",
			turns: []scriptedTurn{
				// One call per reply: parallel calls finish in any order.
				calls(call("c1", "echo", `{"x":"hunter2-secret-value"}`)),
				calls(call("", "failing", ``)),
				calls(call("c3", "nope", `{}`)),
				calls(call("c4", "echo", `not json`)),
				calls(call("c5", "broken", `{}`)),
				calls(call("c6", "fetch", `{"url":"https://x"}`)),
				calls(call("c7", plan.Name, `{"verb":"create","steps":[{"id":"a","title":"A"},{"id":"b","title":"B"}]}`)),
				calls(call("c8", plan.Name, `{"verb":"complete","step_id":"a"}`)),
				calls(call("c9", "maker", `{}`)),
				{err: llm.ErrContextLength},
				{msg: llm.Message{Role: llm.RoleAssistant, Content: "all done"}},
			},
			cfg: func(c *agent.Config) {
				c.EventsIncludeArgs = true
				c.SessionID = "sess-1"
				c.RunStartedData = map[string]any{"extensions": []any{map[string]any{"server": "files", "tools": 3}}}
				c.Persist = func([]llm.Message) error { return nil }
				c.ContextWindow = 1 << 20
			},
		},
		{
			name: "budget_exceeded",
			turns: []scriptedTurn{
				// Only the first call may run: the loop runs it alone, in order.
				calls(call("c1", "echo", `{}`), call("c2", "echo", `{}`)),
			},
			cfg: func(c *agent.Config) {
				c.Budget = budget.NewTracker(budget.Limits{MaxToolCalls: 1}, budget.Prices{}, false, time.Now())
			},
			wantErr: true,
		},
		{
			name:    "model_failed",
			turns:   []scriptedTurn{{err: &llm.APIError{StatusCode: 500, Message: "boom"}}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt := plan.NewTool(plan.Options{Emit: agent.Emit})
			sink := &jsonlSink{}
			cfg := agent.Config{
				LLM: &scripted{turns: tt.turns}, Model: "m", RunID: "0123456789abcdef0123456789abcdef",
				Tools:     []tools.Tool{echoTool(), failing, broken, netTool, arts, pt},
				EventSink: sink, Redactor: red, Plan: pt, MaxToolParallel: 1,
			}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, err := agent.Run(context.Background(), cfg, "goal")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			sink.validate(t, eventstest.Options{AllowArgs: true})
			got := normalize(sink.buf.Bytes())
			golden := filepath.Join("testdata", tt.name+".jsonl")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./agent -run TestGoldenStreams -update creates it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("stream differs from %s (go test ./agent -run TestGoldenStreams -update refreshes it):\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
