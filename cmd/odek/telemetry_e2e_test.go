package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Tracing (issue 24, docs/OBSERVABILITY.md) through the real binary.

const (
	givenTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	givenParent = "00f067aa0ba902b7"
	traceparent = "TRACEPARENT=00-" + givenTrace + "-" + givenParent + "-01"
)

// `odek run` given a TRACEPARENT exports its spans under it to the
// configured collector: odek run → invoke_agent → chat / execute_tool,
// GenAI attributes on, no prompt text (capture is off), and its events
// carry the trace id.
func TestRunExportsSpansUnderTRACEPARENT(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\n"), 0o644)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "r1", Name: "read_file", Arguments: `{"path":"a.txt"}`}),
		llmtest.Reply("secret-answer-text"),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, work, []string{traceparent, "OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL(), "OTEL_BSP_SCHEDULE_DELAY=10"},
		"run", "--events-jsonl", evPath, "read a.txt with the prompt-text-marker")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	spans := rcv.Spans() // odek run exports everything before it exits
	want := map[string]string{
		"odek run":               "",
		"invoke_agent odek":      "odek run",
		"chat test-model":        "invoke_agent odek",
		"execute_tool read_file": "invoke_agent odek",
	}
	for name, parent := range want {
		s := telemetrytest.ByName(spans, name)
		if s == nil {
			t.Fatalf("no span %q among %d; stderr %s", name, len(spans), out.stderr)
		}
		if telemetrytest.Hex(s.GetTraceId()) != givenTrace {
			t.Errorf("%s: trace %s, want the TRACEPARENT's", name, telemetrytest.Hex(s.GetTraceId()))
		}
		wantParent := givenParent
		if parent != "" {
			wantParent = telemetrytest.Hex(telemetrytest.ByName(spans, parent).GetSpanId())
		}
		if got := telemetrytest.Hex(s.GetParentSpanId()); got != wantParent {
			t.Errorf("%s: parent %s, want %s (%s)", name, got, wantParent, parent)
		}
		if rcv.Service(s) != "odek" {
			t.Errorf("%s: service %q", name, rcv.Service(s))
		}
	}
	chat := telemetrytest.ByName(spans, "chat test-model")
	if v, _ := telemetrytest.Attr(chat, "gen_ai.usage.input_tokens"); v == nil {
		t.Error("chat span has no gen_ai.usage.input_tokens")
	}
	for _, s := range spans {
		for _, a := range s.GetAttributes() {
			if v := a.GetValue().GetStringValue(); strings.Contains(v, "prompt-text-marker") || strings.Contains(v, "secret-answer-text") {
				t.Fatalf("content on span %s (%s) with capture off", s.GetName(), a.GetKey())
			}
		}
	}
	for _, ev := range tracedEvents(t, evPath) {
		if ev.TraceID != givenTrace || ev.SpanID == "" {
			t.Fatalf("event %s: trace %q span %q", ev.Type, ev.TraceID, ev.SpanID)
		}
	}
}

// Off (no OTEL_* collector) odek exports nothing but still passes the
// trace it was given to its events.
func TestRunTracingOffKeepsGivenTraceOnEvents(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok"))
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{traceparent}, "run", "--events-jsonl", evPath, "hi")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	for _, ev := range tracedEvents(t, evPath) {
		if ev.TraceID != givenTrace || ev.SpanID != givenParent {
			t.Fatalf("event %s: trace %q span %q", ev.Type, ev.TraceID, ev.SpanID)
		}
	}
}

// One trace across three processes in a real OpenTelemetry Collector:
// `odek queue submit` (given a TRACEPARENT, as a CI step would) → Redis →
// `odek worker` → the agent's model and tool spans, each made where the
// call happens, with nothing rebuilt twice from the events.
func TestQueueJobTraceInCollector(t *testing.T) {
	col := telemetrytest.StartCollector(t)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "r1", Name: "read_file", Arguments: `{"path":"missing.txt"}`}),
		llmtest.Reply("done"),
	)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	e.env = append(e.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.OTLPHTTP, "OTEL_BSP_SCHEDULE_DELAY=10")
	e.startWorker("tw1")
	out := runOdekEnv(t, srv.URL, t.TempDir(), append([]string{traceparent}, e.env...), "queue", "submit", "--chat", "42", "--wait", "read missing.txt")
	if out.code != 0 {
		t.Fatalf("submit exit %d\nstderr: %s", out.code, out.stderr)
	}
	// submit, then the worker's job, claim, run, ack, agent, 2 chats, tool.
	spans := col.WaitSpans(t, 60*time.Second, func(s []*tracepb.Span) bool {
		return telemetrytest.ByName(s, "odek.job") != nil && telemetrytest.ByName(s, "odek queue submit") != nil
	})
	count := map[string]int{}
	for _, s := range spans {
		if telemetrytest.Hex(s.GetTraceId()) != givenTrace {
			t.Errorf("span %s in trace %s", s.GetName(), telemetrytest.Hex(s.GetTraceId()))
		}
		count[s.GetName()]++
	}
	if count["chat test-model"] != 2 || count["execute_tool read_file"] != 1 || count["invoke_agent odek"] != 1 {
		t.Errorf("span counts %v: want one per call, none rebuilt twice", count)
	}
	chain := []struct{ name, parent, service string }{
		{"odek queue submit", "", "odek"},
		{"odek.job", "odek queue submit", "odek-worker"},
		{"odek.job.run", "odek.job", "odek-worker"},
		{"invoke_agent odek", "odek.job.run", "odek-worker"},
		{"chat test-model", "invoke_agent odek", "odek-worker"},
		{"execute_tool read_file", "invoke_agent odek", "odek-worker"},
	}
	for _, c := range chain {
		s := telemetrytest.ByName(spans, c.name)
		if s == nil {
			t.Fatalf("no span %q in the trace: %v", c.name, count)
		}
		want := givenParent
		if c.parent != "" {
			want = telemetrytest.Hex(telemetrytest.ByName(spans, c.parent).GetSpanId())
		}
		if got := telemetrytest.Hex(s.GetParentSpanId()); got != want {
			t.Errorf("%s: parent %s, want %s (%s)", c.name, got, want, c.parent)
		}
		if col.Service(s) != c.service {
			t.Errorf("%s: service %q, want %q", c.name, col.Service(s), c.service)
		}
	}
	if v, _ := telemetrytest.Attr(telemetrytest.ByName(spans, "odek.job"), "gen_ai.conversation.id"); v == nil {
		if v, _ := telemetrytest.Attr(telemetrytest.ByName(spans, "invoke_agent odek"), "gen_ai.conversation.id"); v == nil {
			t.Error("no gen_ai.conversation.id on the job or agent span")
		}
	}
	if v, _ := telemetrytest.Attr(telemetrytest.ByName(spans, "execute_tool read_file"), "gen_ai.tool.name"); v != "read_file" {
		t.Errorf("gen_ai.tool.name = %v", v)
	}
}

// tracedEvents validates the events file and decodes its lines with their
// trace fields (the validator predates them).
func tracedEvents(t *testing.T, path string) []events.Event {
	t.Helper()
	n := len(readEvents(t, path))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev events.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != n || n == 0 {
		t.Fatalf("%d events decoded, %d validated", len(evs), n)
	}
	return evs
}
