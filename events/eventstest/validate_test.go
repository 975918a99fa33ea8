package eventstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/events"
)

const runID = "0123456789abcdef0123456789abcdef"

// line builds one event line from its parts; data may be nil.
func line(seq int, typ events.Type, iteration int, tool string, data map[string]any) string {
	m := map[string]any{
		"schema": events.Schema, "type": typ, "seq": seq, "run_id": runID,
		"timestamp": "2026-08-07T12:00:00.5Z",
	}
	if iteration > 0 {
		m["iteration"] = iteration
	}
	if tool != "" {
		m["tool"] = tool
	}
	if data != nil {
		m["data"] = data
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func started(seq int, callID string) string {
	return line(seq, events.ToolCallStarted, 1, "shell", map[string]any{
		"call_id": callID, "args_sha256": strings.Repeat("a", 64), "args_bytes": 10, "args_summary": map[string]any{"argv0": "ls"},
	})
}

func completed(seq int, callID, tool string) string {
	return line(seq, events.ToolCallCompleted, 1, tool, map[string]any{"call_id": callID, "duration_ms": 1, "result_bytes": 2, "artifact_count": 0})
}

func runStarted(seq int) string {
	return line(seq, events.RunStarted, 0, "", map[string]any{"model": "m", "sandbox": true, "max_iterations": 10})
}

func runCompleted(seq int) string {
	return line(seq, events.RunCompleted, 0, "", map[string]any{"duration_ms": 5, "input_tokens": 1, "output_tokens": 2})
}

func runFailed(seq int) string {
	return line(seq, events.RunFailed, 0, "", map[string]any{"duration_ms": 5, "error_class": "budget_exceeded"})
}

func stream(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// withField returns l with one top-level field set (or deleted for nil).
func withField(l, key string, v any) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		panic(err)
	}
	if v == nil {
		delete(m, key)
	} else {
		m[key] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestValidateLine(t *testing.T) {
	ok := started(1, "c1")
	tests := []struct {
		name, line string
		errs       []string // substrings, one per expected violation; none for a valid line
	}{
		{"valid", ok, nil},
		{"unknown type and fields", withField(line(1, "future_type", 0, "", map[string]any{"x": 1}), "extra", true), nil},
		{"not JSON", "{", []string{"not JSON"}},
		{"not an object", "[1]", []string{"want a JSON object"}},
		{"two values", ok + " {}", []string{"more than one JSON value"}},
		{"empty", "  ", []string{"empty line"}},
		{"schema", withField(ok, "schema", "odek.event/v2"), []string{`schema: want "odek.event/v1"`}},
		{"seq zero", withField(ok, "seq", 0), []string{"seq: want an integer ≥ 1"}},
		{"seq fraction", withField(ok, "seq", 1.5), []string{"seq: want an integer ≥ 1"}},
		{"seq missing", withField(ok, "seq", nil), []string{"seq: want an integer ≥ 1, got null or nothing"}},
		{"type missing", withField(ok, "type", nil), []string{"type: want a non-empty string"}},
		{"run id upper case", withField(ok, "run_id", strings.ToUpper(runID)), []string{"run_id: want 32 lower-case hex"}},
		{"run id short", withField(ok, "run_id", "abc"), []string{"run_id"}},
		{"session id empty", withField(ok, "session_id", ""), []string{"session_id"}},
		{"timestamp not UTC", withField(ok, "timestamp", "2026-08-07T14:00:00+02:00"), []string{"timestamp: want RFC 3339 in UTC"}},
		{"timestamp garbage", withField(ok, "timestamp", "yesterday"), []string{"timestamp"}},
		{"tool event without iteration", withField(ok, "iteration", nil), []string{"iteration: missing"}},
		{"iteration zero", withField(ok, "iteration", 0), []string{"iteration: want an integer ≥ 1"}},
		{"tool event without tool", withField(ok, "tool", nil), []string{"tool: missing"}},
		{"data not an object", withField(ok, "data", "x"), []string{"data: want an object", "data.call_id: missing", "data.args_sha256: missing", "data.args_bytes: missing", "data.args_summary: missing"}},
		{"args without opt-in", line(1, events.ToolCallStarted, 1, "shell", map[string]any{
			"call_id": "c", "args_sha256": strings.Repeat("a", 64), "args_bytes": 1, "args_summary": map[string]any{}, "args": map[string]any{"cmd": "ls"},
		}), []string{"data.args: raw arguments"}},
		{"bad hash", line(1, events.ToolCallStarted, 1, "shell", map[string]any{
			"call_id": "c", "args_sha256": strings.Repeat("A", 64), "args_bytes": -1, "args_summary": "argv0=ls",
		}), []string{"data.args_sha256: want 64", "data.args_bytes: want an integer ≥ 0", "data.args_summary: want an object"}},
		{"raw error text as class", line(1, events.ToolCallFailed, 1, "shell", map[string]any{
			"call_id": "c", "duration_ms": 1, "error_class": "open /etc/x: permission denied",
		}), []string{"data.error_class: want a stable class name"}},
		{"run_started types", line(1, events.RunStarted, 0, "", map[string]any{"model": "", "sandbox": "yes", "max_iterations": 2.5}),
			[]string{"data.model", "data.sandbox: want true or false", "data.max_iterations"}},
		{"speed field zero", line(1, events.IterationCompleted, 1, "", map[string]any{
			"input_tokens": 1, "output_tokens": 1, "tools_called": 0, "ttft_ms": 0,
		}), []string{"data.ttft_ms: want a number > 0"}},
		{"iteration_completed needs iteration", line(1, events.IterationCompleted, 0, "", map[string]any{
			"input_tokens": 1, "output_tokens": 1, "tools_called": 0,
		}), []string{"iteration: missing"}},
		{"budget limit name", line(1, events.BudgetExceeded, 1, "", map[string]any{"limit_name": "tokens", "observed": 3, "limit": -1}),
			[]string{"data.limit_name: want one of runtime, tool_calls", "data.limit: want a number ≥ 0"}},
		{"context_trimmed mode", line(1, events.ContextTrimmed, 1, "", map[string]any{"mode": "aggressive", "dropped_groups": 1, "truncated_results": 0}),
			[]string{"data.mode: want one of proactive, survival"}},
		{"plan event with iteration", line(1, events.PlanCreated, 2, "", map[string]any{"steps": 3, "version": 0}),
			[]string{"iteration: plan events carry no iteration", "data.version: want an integer ≥ 1"}},
		{"plan_updated counts", line(1, events.PlanUpdated, 0, "", map[string]any{"steps": 3, "version": 2}),
			[]string{"data.done: missing", "data.in_progress: missing", "data.blocked: missing", "data.pending: missing"}},
		{"subagent_spawned", line(1, events.SubagentSpawned, 0, "", map[string]any{"task_id": "t", "pid": 0, "depth": 1, "timeout_seconds": 3, "goal_sha256": strings.Repeat("a", 64)}),
			[]string{"data.pid: want an integer ≥ 1", "data.goal_sha256: want 16"}},
		{"subagent_completed optional", line(1, events.SubagentCompleted, 0, "", map[string]any{"task_id": "t", "status": "ok", "duration_seconds": -1}),
			[]string{"data.duration_seconds: want a number ≥ 0"}},
		{"subagent_denied", line(1, events.SubagentDenied, 0, "", map[string]any{"task_index": 0}),
			[]string{"data.class: missing", "data.reason: missing"}},
		{"subagent_concurrency_wait", line(1, events.SubagentConcurrencyWait, 0, "", map[string]any{"task_index": 0, "waited_ms": "5"}),
			[]string{"data.waited_ms"}},
		{"session_saved", line(1, events.SessionSaved, 0, "", nil), []string{"data.message_count: missing"}},
		{"run_failed", line(1, events.RunFailed, 0, "", map[string]any{"duration_ms": 1, "tokens_per_second": 0}),
			[]string{"data.error_class: missing", "data.tokens_per_second"}},
		{"run_completed", line(1, events.RunCompleted, 0, "", map[string]any{"duration_ms": 1, "input_tokens": 1}),
			[]string{"data.output_tokens: missing"}},
		{"shrunk line excuses dropped fields", line(1, events.ToolCallStarted, 1, "shell", map[string]any{
			"call_id": "c", "args_bytes": 1, "truncated_fields": []string{"args_sha256", "args_summary"}, "line_bytes": 2000,
		}), nil},
		{"shrunk line needs line_bytes", line(1, events.SessionSaved, 0, "", map[string]any{"truncated_fields": []any{"message_count", 3}}),
			[]string{"data.truncated_fields: want an array of strings", "data.line_bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateLine([]byte(tt.line))
			checkErrors(t, err, tt.errs)
		})
	}
}

// checkErrors checks that err holds exactly one *Error per substring.
func checkErrors(t *testing.T, err error, want []string) {
	t.Helper()
	var got []string
	if err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var verr *Error
			if !errors.As(e, &verr) {
				t.Errorf("violation %v is not an *Error", e)
			}
			got = append(got, e.Error())
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("violation %d is %q, want it to mention %q", i, got[i], want[i])
		}
	}
}

func TestValidateLineReturnsEvent(t *testing.T) {
	ev, err := ValidateLine([]byte(withField(started(7, "c9"), "session_id", "s1") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 7 || ev.Type != events.ToolCallStarted || ev.RunID != runID || ev.SessionID != "s1" ||
		ev.Iteration != 1 || ev.Tool != "shell" || ev.Data["call_id"] != "c9" || ev.Data["args_bytes"] != json.Number("10") ||
		ev.Timestamp.IsZero() {
		t.Errorf("decoded %+v", ev)
	}
}

func TestValidateStream(t *testing.T) {
	good := stream(runStarted(1), started(2, "a"), started(3, "b"), completed(4, "b", "shell"), completed(5, "a", "shell"), runCompleted(6))
	tests := []struct {
		name   string
		stream string
		opts   Options
		errs   []string
	}{
		{"good", good, Options{}, nil},
		{"empty", "", Options{}, []string{"empty stream"}},
		{"no final newline", strings.TrimSuffix(good, "\n"), Options{}, []string{"line 6: last line has no newline", "no final run_completed"}},
		{"blank line", stream(runStarted(1), "", runCompleted(2)), Options{}, []string{"line 2: empty line"}},
		{"starts at 2", stream(runStarted(2), runCompleted(3)), Options{}, []string{"line 1: seq 2: seq: the first event must have seq 1"}},
		{"gap", stream(runStarted(1), runCompleted(3)), Options{}, []string{"line 2: seq 3: seq: gap after seq 1"}},
		{"gap allowed", stream(runStarted(1), runCompleted(3)), Options{AllowGaps: true}, nil},
		{"gap hides the start of a call", stream(runStarted(1), completed(3, "x", "shell"), runCompleted(4)), Options{AllowGaps: true}, nil},
		{"repeated seq", stream(runStarted(1), runStarted(1), runCompleted(2)), Options{AllowGaps: true}, []string{"line 2: seq 1: seq: not increasing"}},
		{"two run ids", stream(runStarted(1), withField(runCompleted(2), "run_id", strings.Repeat("f", 32))), Options{}, []string{"run_id: \"ffff"}},
		{"session id lost", stream(withField(runStarted(1), "session_id", "s"), runCompleted(2)), Options{}, []string{"line 2: seq 2: session_id: missing"}},
		{"session id changed", stream(withField(runStarted(1), "session_id", "s"), withField(runCompleted(2), "session_id", "t")), Options{}, []string{"session_id: \"t\" differs"}},
		{"no final event", stream(runStarted(1)), Options{}, []string{"no final run_completed or run_failed"}},
		{"two final events", stream(runStarted(1), runCompleted(2), runFailed(3)), Options{}, []string{"line 3: seq 3: type: run_failed after the final event on line 2"}},
		{"event after final", stream(runCompleted(1), runStarted(2)), Options{}, []string{"run_started after the final event"}},
		{"call never ends", stream(runStarted(1), started(2, "a"), runCompleted(3)), Options{}, []string{"line 2: data.call_id: tool call \"a\" never completed or failed"}},
		{"call never starts", stream(runStarted(1), completed(2, "a", "shell"), runCompleted(3)), Options{}, []string{"tool_call_completed for \"a\", which never started"}},
		{"call started twice", stream(started(1, "a"), started(2, "a"), completed(3, "a", "shell"), runCompleted(4)), Options{}, []string{"\"a\" already started on line 1"}},
		{"call ended twice", stream(started(1, "a"), completed(2, "a", "shell"), completed(3, "a", "shell"), runCompleted(4)), Options{}, []string{"\"a\" already ended on line 2"}},
		{"call changes tool", stream(started(1, "a"), completed(2, "a", "http_get"), runCompleted(3)), Options{}, []string{"tool: \"http_get\" differs from \"shell\""}},
		{"budget then completed", stream(runStarted(1),
			line(2, events.BudgetExceeded, 1, "", map[string]any{"limit_name": "runtime", "observed": 61, "limit": 60}), runCompleted(3)),
			Options{}, []string{"run_completed after budget_exceeded on line 2"}},
		{"budget then failed", stream(runStarted(1),
			line(2, events.BudgetExceeded, 1, "", map[string]any{"limit_name": "runtime", "observed": 61, "limit": 60}), runFailed(3)),
			Options{}, nil},
		{"line errors carry line numbers", stream(runStarted(1), withField(runCompleted(2), "schema", "x")), Options{}, []string{"line 2: seq 2: schema"}},
		{"too long", stream(runStarted(1), `{"x":"`+strings.Repeat("a", MaxLineBytes)+`"}`), Options{}, []string{"line 2: line longer than", "no final"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateStream(strings.NewReader(tt.stream), tt.opts)
			checkErrors(t, err, tt.errs)
		})
	}
}

func TestValidateStreamCapsErrors(t *testing.T) {
	var lines []string
	for i := range 200 {
		lines = append(lines, withField(runStarted(i+1), "schema", "x"))
	}
	_, err := ValidateStream(strings.NewReader(stream(lines...)), Options{})
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != maxErrors {
		t.Errorf("%d errors, want %d", n, maxErrors)
	}
}

// TestGoldenStreams checks the emitter's golden files against the
// validator, so the two cannot drift apart.
func TestGoldenStreams(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no golden streams in ../testdata")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ValidateStream(strings.NewReader(string(b)), Options{AllowArgs: true})
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if len(evs) == 0 || !isTerminal(evs[len(evs)-1].Type) {
			t.Errorf("%s: %d events, last not terminal", f, len(evs))
		}
	}
}

func FuzzValidateLine(f *testing.F) {
	f.Add([]byte(started(1, "c1")))
	f.Add([]byte(runFailed(3)))
	f.Add([]byte(line(2, events.SubagentSpawned, 0, "", map[string]any{"task_id": "t", "pid": 1, "depth": 1, "timeout_seconds": 3, "goal_sha256": "0123456789abcdef"})))
	f.Add([]byte(`{"seq":1e400,"data":{"truncated_fields":[1],"line_bytes":"x"}}`))
	f.Add([]byte(`{"schema":"odek.event/v1","type":"x","seq":18446744073709551616}`))
	f.Add([]byte("\xff{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := ValidateLine(b)
		if err == nil {
			// A valid line decodes to an event that re-encodes to a valid line.
			out, merr := json.Marshal(ev)
			if merr != nil {
				t.Fatalf("valid line %q decoded to unencodable %+v: %v", b, ev, merr)
			}
			if _, err := ValidateLine(out); err != nil {
				t.Fatalf("valid line %q re-encoded as invalid %s: %v", b, out, err)
			}
			return
		}
		if s := err.Error(); !strings.HasPrefix(s, "eventstest: ") {
			t.Fatalf("error without package prefix: %q", s)
		}
		_ = fmt.Sprint(ev)
	})
}
