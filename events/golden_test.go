package events_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/events/eventstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// stepClock returns a clock that starts at 2026-08-07T12:00:00Z and advances
// 1.25 ms per call.
func stepClock() func() time.Time {
	t := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(1250 * time.Microsecond)
		return t
	}
}

const goldenRunID = "0123456789abcdef0123456789abcdef"

func redactHunter2(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED]") }

func TestGolden(t *testing.T) {
	tests := []struct {
		name    string
		file    events.FileOptions
		opts    eventstest.Options
		script  func(e *events.Emitter)
		final   events.Type
		summary map[string]any
	}{
		{
			name: "run_completed",
			script: func(e *events.Emitter) {
				e.Emit(events.RunStarted, 0, "", map[string]any{"model": "gpt-test", "sandbox": true, "max_iterations": 20})
				e.Emit(events.ToolCallStarted, 1, "read_file", map[string]any{
					"call_id": "call_a", "args_sha256": strings.Repeat("ab", 32), "args_bytes": 31,
					"args_summary": map[string]any{"path": "/home/u/hunter2.txt", "class": "safe"},
				})
				e.Emit(events.ToolCallStarted, 1, "shell", map[string]any{
					"call_id": "it1-call1", "args_sha256": strings.Repeat("cd", 32), "args_bytes": 12,
					"args_summary": map[string]any{"argv0": "ls", "class": "safe"},
				})
				// Parallel calls finish in any order; call_id pairs them.
				e.Emit(events.ToolCallCompleted, 1, "shell", map[string]any{"call_id": "it1-call1", "duration_ms": 12, "result_bytes": 80, "artifact_count": 0})
				e.Emit(events.ToolCallFailed, 1, "read_file", map[string]any{"call_id": "call_a", "duration_ms": 3, "error_class": "tool_error"})
				e.Emit(events.IterationCompleted, 1, "", map[string]any{
					"input_tokens": 1200, "output_tokens": 85, "tools_called": 2,
					"call_duration_ms": 950, "ttft_ms": 210, "tokens_per_second": 89.5,
				})
				e.SetSessionID("sess-42")
				e.Emit(events.SessionSaved, 1, "", map[string]any{"message_count": 5})
				e.Emit(events.ContextTrimmed, 2, "", map[string]any{"mode": "proactive", "dropped_groups": 2, "truncated_results": 1})
				e.Emit(events.PlanCreated, 0, "", map[string]any{"steps": 3, "version": 1})
				e.Emit(events.PlanUpdated, 0, "", map[string]any{"steps": 3, "done": 1, "in_progress": 1, "blocked": 0, "pending": 1, "version": 2})
				e.Emit(events.PlanBlocked, 0, "", map[string]any{"steps": 3, "blocked": 1, "version": 3})
				e.Emit(events.SubagentDenied, 2, "", map[string]any{"task_index": 1, "class": "network_egress", "reason": "policy"})
				e.Emit(events.SubagentConcurrencyWait, 2, "", map[string]any{"task_index": 0, "waited_ms": 40})
				e.Emit(events.SubagentSpawned, 2, "", map[string]any{"task_id": "t0", "pid": 4242, "depth": 1, "timeout_seconds": 300, "goal_sha256": "0123456789abcdef"})
				e.Emit(events.SubagentCompleted, 2, "", map[string]any{"task_id": "t0", "status": "ok", "iterations": 3, "duration_seconds": 1.5})
				e.Emit("future_type", 2, "", map[string]any{"anything": "goes"})
			},
			final:   events.RunCompleted,
			summary: map[string]any{"duration_ms": 5210, "input_tokens": 2400, "output_tokens": 170, "llm_duration_ms": 1900, "tokens_per_second": 89.5},
		},
		{
			name: "budget_exceeded",
			script: func(e *events.Emitter) {
				e.Emit(events.RunStarted, 0, "", map[string]any{"model": "gpt-test", "sandbox": false, "max_iterations": 5})
				e.Emit(events.ToolCallStarted, 1, "http_get", map[string]any{
					"call_id": "c1", "args_sha256": strings.Repeat("0f", 32), "args_bytes": 40,
					"args_summary": map[string]any{"host": "example.com", "class": "network_egress"},
				})
				e.Emit(events.ToolCallCompleted, 1, "http_get", map[string]any{"call_id": "c1", "duration_ms": 120, "result_bytes": 5000, "artifact_count": 1})
				e.Emit(events.IterationCompleted, 1, "", map[string]any{"input_tokens": 900, "output_tokens": 40, "tools_called": 1})
				e.Emit(events.BudgetExceeded, 1, "", map[string]any{"limit_name": "cost_usd", "observed": 0.0123, "limit": 0.01})
			},
			final:   events.RunFailed,
			summary: map[string]any{"duration_ms": 700, "error_class": "budget_exceeded"},
		},
		{
			name: "shrunk_line",
			file: events.FileOptions{MaxLineBytes: 512},
			opts: eventstest.Options{AllowArgs: true},
			script: func(e *events.Emitter) {
				e.Emit(events.RunStarted, 0, "", map[string]any{"model": "gpt-test", "sandbox": true, "max_iterations": 5})
				e.Emit(events.ToolCallStarted, 1, "write_file", map[string]any{
					"call_id": "c1", "args_sha256": strings.Repeat("12", 32), "args_bytes": 2000,
					"args_summary": map[string]any{"path": "/tmp/out.txt", "class": "local_write"},
					"args":         map[string]any{"path": "/tmp/out.txt", "content": strings.Repeat("long text ", 200)},
				})
				e.Emit(events.ToolCallCompleted, 1, "write_file", map[string]any{"call_id": "c1", "duration_ms": 2, "result_bytes": 10, "artifact_count": 0})
			},
			final:   events.RunCompleted,
			summary: map[string]any{"duration_ms": 10, "input_tokens": 1, "output_tokens": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			tt.file.NoSync = true
			sink, err := events.OpenFile(path, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			e := events.NewEmitter(goldenRunID, sink, events.Options{Clock: stepClock(), Redact: redactHunter2})
			tt.script(e)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.Final(ctx, tt.final, tt.summary); err != nil {
				t.Fatal(err)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eventstest.ValidateStream(bytes.NewReader(got), tt.opts); err != nil {
				t.Errorf("stream breaks the contract:\n%v", err)
			}
			if bytes.Contains(got, []byte("hunter2")) {
				t.Error("unredacted string in the stream")
			}
			golden := filepath.Join("testdata", tt.name+".jsonl")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./events -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("stream differs from %s (go test ./events -update refreshes it):\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
