package events_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
)

// decoder is what every payload type has besides events.Payload.
type decoder interface {
	events.Payload
	Decode(map[string]any)
}

// TestPayloadsKeepTheWire: every typed payload renders the JSON the
// hand-built maps of earlier versions did (the maps below are the ones
// those producers built), and decodes back from its own map and from the
// JSON a consumer reads, unknown fields ignored.
func TestPayloadsKeepTheWire(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		p    events.Payload
		old  map[string]any
		into decoder
	}{
		{events.RunStartedData{Model: "m", Sandbox: true, MaxIterations: 20, Extra: map[string]any{"extensions": []any{"x"}, "model": "loses"}},
			map[string]any{"model": "m", "sandbox": true, "max_iterations": 20, "extensions": []any{"x"}}, &events.RunStartedData{}},
		{events.IterationCompletedData{InputTokens: 1200, OutputTokens: 85, ToolsCalled: 2, CallDuration: 950*ms + 250*time.Microsecond, TTFT: 210 * ms, Generation: 700 * ms, CallInputTokens: 600, CallOutputTokens: 40},
			map[string]any{"input_tokens": 1200, "output_tokens": 85, "tools_called": 2, "call_duration_ms": 950.25, "ttft_ms": 210.0, "generation_ms": 700.0,
				"call_input_tokens": 600, "call_output_tokens": 40, "tokens_per_second": 42.09, "generation_tokens_per_second": 57.14}, &events.IterationCompletedData{}},
		{events.IterationCompletedData{InputTokens: 5, ToolsCalled: 0},
			map[string]any{"input_tokens": 5, "output_tokens": 0, "tools_called": 0}, &events.IterationCompletedData{}},
		{events.ToolCallStartedData{CallID: "c1", ArgsSHA256: strings.Repeat("ab", 32), ArgsBytes: 31, ArgsSummary: map[string]any{"path": "/x", "class": "safe"}, Args: `{"path":"/x"}`},
			map[string]any{"call_id": "c1", "args_sha256": strings.Repeat("ab", 32), "args_bytes": 31, "args_summary": map[string]any{"path": "/x", "class": "safe"}, "args": `{"path":"/x"}`}, &events.ToolCallStartedData{}},
		{events.ToolCallStartedData{CallID: "c2", ArgsSHA256: "00", ArgsBytes: 2},
			map[string]any{"call_id": "c2", "args_sha256": "00", "args_bytes": 2, "args_summary": map[string]any{}}, &events.ToolCallStartedData{}},
		{events.ToolCallCompletedData{CallID: "c1", Duration: 12*ms + 900*time.Microsecond, ResultBytes: 80, ArtifactCount: 1},
			map[string]any{"call_id": "c1", "duration_ms": int64(12), "result_bytes": 80, "artifact_count": 1}, &events.ToolCallCompletedData{}},
		{events.ToolCallFailedData{CallID: "c1", Duration: 3 * ms, ErrorClass: "tool_error"},
			map[string]any{"call_id": "c1", "duration_ms": int64(3), "error_class": "tool_error"}, &events.ToolCallFailedData{}},
		{events.SessionSavedData{MessageCount: 5}, map[string]any{"message_count": 5}, &events.SessionSavedData{}},
		{events.ContextTrimmedData{Mode: "proactive", DroppedGroups: 2, TruncatedResults: 1},
			map[string]any{"mode": "proactive", "dropped_groups": 2, "truncated_results": 1}, &events.ContextTrimmedData{}},
		{events.BudgetExceededData{LimitName: "cost_usd", Observed: 0.0123, Limit: 0.01},
			map[string]any{"limit_name": "cost_usd", "observed": 0.0123, "limit": 0.01}, &events.BudgetExceededData{}},
		{events.RunCompletedData{Duration: 5210 * ms, InputTokens: 2400, OutputTokens: 170, LLMDuration: 1900 * ms},
			map[string]any{"duration_ms": int64(5210), "input_tokens": 2400, "output_tokens": 170, "llm_duration_ms": int64(1900), "tokens_per_second": 89.47}, &events.RunCompletedData{}},
		{events.RunCompletedData{Duration: 10 * ms, InputTokens: 1, OutputTokens: 1},
			map[string]any{"duration_ms": int64(10), "input_tokens": 1, "output_tokens": 1}, &events.RunCompletedData{}},
		{events.RunFailedData{Duration: 700 * ms, ErrorClass: "budget_exceeded"},
			map[string]any{"duration_ms": int64(700), "error_class": "budget_exceeded"}, &events.RunFailedData{}},
		{events.RunFailedData{Duration: 700 * ms, ErrorClass: "llm_error", LLMDuration: 500 * time.Microsecond, OutputTokens: 3},
			map[string]any{"duration_ms": int64(700), "error_class": "llm_error", "llm_duration_ms": int64(0), "tokens_per_second": 6000.0}, &events.RunFailedData{}},
		{events.PlanCreatedData{Steps: 3, Version: 1}, map[string]any{"steps": 3, "version": 1}, &events.PlanCreatedData{}},
		{events.PlanUpdatedData{Steps: 3, Done: 1, InProgress: 1, Pending: 1, Version: 2},
			map[string]any{"steps": 3, "done": 1, "in_progress": 1, "blocked": 0, "pending": 1, "version": 2}, &events.PlanUpdatedData{}},
		{events.PlanBlockedData{Steps: 3, Blocked: 1, Version: 3}, map[string]any{"steps": 3, "blocked": 1, "version": 3}, &events.PlanBlockedData{}},
		{events.SubagentDeniedData{TaskIndex: 1, Class: "network_egress", Reason: "policy"},
			map[string]any{"task_index": 1, "class": "network_egress", "reason": "policy"}, &events.SubagentDeniedData{}},
		{events.SubagentConcurrencyWaitData{TaskIndex: 0, Waited: 40 * ms}, map[string]any{"task_index": 0, "waited_ms": int64(40)}, &events.SubagentConcurrencyWaitData{}},
		{events.SubagentSpawnedData{TaskID: "t0", PID: 4242, Depth: 1, TimeoutSeconds: 300, GoalSHA256: "0123456789abcdef"},
			map[string]any{"task_id": "t0", "pid": 4242, "depth": 1, "timeout_seconds": 300, "goal_sha256": "0123456789abcdef"}, &events.SubagentSpawnedData{}},
		{events.SubagentCompletedData{TaskID: "t0", Status: "success", Counted: true, Iterations: 3, DurationSeconds: 1.5, TokensUsed: 90, ArtifactCount: 2},
			map[string]any{"task_id": "t0", "status": "success", "iterations": 3, "duration_seconds": 1.5, "tokens_used": 90, "artifact_count": 2}, &events.SubagentCompletedData{}},
		{events.SubagentCompletedData{TaskID: "t1", Status: "error"},
			map[string]any{"task_id": "t1", "status": "error"}, &events.SubagentCompletedData{}},
	}
	for _, tt := range tests {
		name := string(tt.p.EventType())
		got, _ := json.Marshal(tt.p.Data())
		want, _ := json.Marshal(tt.old)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		// In-process round trip.
		tt.into.Decode(tt.p.Data())
		again, _ := json.Marshal(tt.into.Data())
		if !bytes.Equal(again, got) && !isRunFailedWithTPS(tt.p) {
			t.Errorf("%s does not survive Decode(Data()):\n got %s\nwant %s", name, again, got)
		}
		// From the wire, with a field from a future version.
		var wire map[string]any
		dec := json.NewDecoder(bytes.NewReader(append(got[:len(got)-1:len(got)-1], `,"zz_future":{"a":1}}`...)))
		dec.UseNumber()
		if err := dec.Decode(&wire); err != nil {
			t.Fatal(err)
		}
		fresh := reflect.New(reflect.TypeOf(tt.into).Elem()).Interface().(decoder)
		fresh.Decode(wire)
		fromWire, _ := json.Marshal(fresh.Data())
		if tt.p.EventType() == events.RunStarted {
			continue // keeps unknown fields in Extra by design
		}
		if !bytes.Equal(fromWire, got) && !isRunFailedWithTPS(tt.p) {
			t.Errorf("%s from the wire:\n got %s\nwant %s", name, fromWire, got)
		}
	}
}

// isRunFailedWithTPS: run_failed's tokens_per_second comes from output
// tokens the event does not carry, so a decoded one cannot render it.
func isRunFailedWithTPS(p events.Payload) bool {
	f, ok := p.(events.RunFailedData)
	return ok && f.OutputTokens > 0
}

func TestNumbersOfAnyShape(t *testing.T) {
	for _, v := range []any{7, int64(7), int32(7), uint64(7), 7.0, float32(7), json.Number("7")} {
		if events.Int(v) != 7 || events.Float(v) != 7 {
			t.Errorf("Int(%T) = %d", v, events.Int(v))
		}
	}
	for _, v := range []any{nil, "7", true, map[string]any{}} {
		if events.Int(v) != 0 {
			t.Errorf("Int(%T) = %d, want 0", v, events.Int(v))
		}
	}
}
