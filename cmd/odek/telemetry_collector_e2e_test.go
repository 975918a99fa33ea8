package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	"github.com/odekrun/odek/mcpclient/mcptest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// One trace from a CI step's TRACEPARENT to a shell command and into an
// MCP server, in a real OpenTelemetry Collector (issue 24): `odek run`
// (the real binary) calls the shell tool and a tool of a real stdio MCP
// server; the model, tool and MCP request spans are made where the calls
// happen, the shell command sees its tool span's TRACEPARENT and the MCP
// server receives the request span's context in params._meta. The spans
// are read back from what the Collector's file exporter wrote.
func TestRunTraceReachesShellAndMCPInCollector(t *testing.T) {
	col := telemetrytest.StartCollector(t)
	fx := mcptest.FixturePath(t)
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"fx":{"command":%q,"args":["-chaos"],"auto_approve":true}},"dangerous":{"non_interactive":"allow"}`, fx))
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "s1", Name: "shell", Arguments: `{"command":"echo tp=$TRACEPARENT"}`}),
		llmtest.CallTools(llmtest.Call{ID: "m1", Name: "fx__trace_seen", Arguments: `{}`}),
		llmtest.Reply("done"),
	)
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv, traceparent,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.OTLPHTTP, "OTEL_BSP_SCHEDULE_DELAY=10"}, "run", "use the shell, then the fixture")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	byName := func(spans []*tracepb.Span, name string) *tracepb.Span { return telemetrytest.ByName(spans, name) }
	spans := col.WaitSpans(t, 30*time.Second, func(s []*tracepb.Span) bool { return byName(s, "odek run") != nil })
	chain := []struct{ name, parent string }{
		{"odek run", ""},
		{"invoke_agent odek", "odek run"},
		{"chat test-model", "invoke_agent odek"},
		{"execute_tool shell", "invoke_agent odek"},
		{"execute_tool fx__trace_seen", "invoke_agent odek"},
		{"tools/call fx", "execute_tool fx__trace_seen"},
	}
	for _, c := range chain {
		s := byName(spans, c.name)
		if s == nil {
			t.Fatalf("no span %q among %d; stderr %s", c.name, len(spans), out.stderr)
		}
		want := givenParent
		if c.parent != "" {
			want = telemetrytest.Hex(byName(spans, c.parent).GetSpanId())
		}
		if telemetrytest.Hex(s.GetTraceId()) != givenTrace || telemetrytest.Hex(s.GetParentSpanId()) != want {
			t.Errorf("%s: trace %s parent %s, want %s / %s (%s)", c.name, telemetrytest.Hex(s.GetTraceId()),
				telemetrytest.Hex(s.GetParentSpanId()), givenTrace, want, c.parent)
		}
		if col.Service(s) != "odek" {
			t.Errorf("%s: service %q", c.name, col.Service(s))
		}
	}
	var chats int
	for _, s := range spans {
		if s.GetName() == "chat test-model" {
			chats++
		}
	}
	if chats != 3 {
		t.Errorf("%d chat spans, want one per model call (3)", chats)
	}
	if v, _ := telemetrytest.Attr(byName(spans, "chat test-model"), "gen_ai.usage.input_tokens"); v == nil {
		t.Error("chat span without gen_ai.usage.input_tokens")
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	shellTP := "tp=00-" + givenTrace + "-" + telemetrytest.Hex(byName(spans, "execute_tool shell").GetSpanId()) + "-01"
	if got := reqs[1].LastMessage().Content; !strings.Contains(got, shellTP) {
		t.Errorf("shell output %q, want %q", got, shellTP)
	}
	var seen struct {
		Meta string `json:"meta_traceparent"`
	}
	got := reqs[2].LastMessage().Content
	if i := strings.Index(got, "{"); i >= 0 {
		_ = json.Unmarshal([]byte(got[i:strings.LastIndex(got, "}")+1]), &seen)
	}
	if want := "00-" + givenTrace + "-" + telemetrytest.Hex(byName(spans, "tools/call fx").GetSpanId()) + "-01"; seen.Meta != want {
		t.Errorf("MCP server saw _meta.traceparent %q, want %q (result %q)", seen.Meta, want, got)
	}
}
