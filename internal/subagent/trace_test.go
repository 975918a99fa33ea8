package subagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	"github.com/odekrun/odek/internal/tools"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// A sub-agent joins its parent's trace (issue 24): the parent opens an
// odek.subagent span per child and puts it in the child's TRACEPARENT;
// the real `odek subagent` child continues it, and its own spans (the
// command, the agent run, the model call), exported by the child to the
// same receiver, hang below it.
func TestSubagentJoinsParentTrace(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint(), ScheduleWait: 10 * time.Millisecond},
		telemetry.Options{Service: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		if firstUser(r) == "PARENT" && len(r.Messages) <= 2 {
			return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "delegate_tasks", Arguments: `{"tasks":[{"goal":"CHILD"}]}`}}}
		}
		return llmtest.Reply("ok")
	})
	client, err := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	env := append(childEnviron(t, srv.URL), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL(), "OTEL_BSP_SCHEDULE_DELAY=10",
		"TRACEPARENT=00-11111111111111111111111111111111-2222222222222222-01") // an inherited one must be replaced
	d := subagent.NewDelegateTool(subagent.Options{Executable: odekBin, Environ: env, WorkDir: t.TempDir(),
		ArtifactsDir: t.TempDir(), Store: &artifactstore.Store{}})
	ctx, root := telemetry.Start(context.Background(), "test.root")
	if _, err := agent.Run(ctx, agent.Config{LLM: client, Model: "m", Tools: []tools.Tool{d}}, "PARENT"); err != nil {
		t.Fatal(err)
	}
	root.End()
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	tid := root.SpanContext().TraceID().String()
	var spans []*tracepb.Span
	find := func(name string) *tracepb.Span {
		for _, s := range spans {
			if s.GetName() == name {
				return s
			}
		}
		return nil
	}
	// The child exports before it exits; the parent waited for it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		spans = rcv.Spans()
		if find("chat test-model") != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	parentOf := [][2]string{
		{"odek.subagent", "test.root"},
		{"odek subagent", "odek.subagent"},
		{"invoke_agent odek", "odek subagent"},
		{"chat test-model", "invoke_agent odek"},
	}
	for _, pc := range parentOf {
		s, parent := find(pc[0]), find(pc[1])
		if s == nil || parent == nil && pc[1] != "test.root" {
			t.Fatalf("missing %s or %s among %d spans", pc[0], pc[1], len(spans))
		}
		want := root.SpanContext().SpanID().String()
		if parent != nil {
			want = telemetrytest.Hex(parent.GetSpanId())
		}
		if telemetrytest.Hex(s.GetTraceId()) != tid || telemetrytest.Hex(s.GetParentSpanId()) != want {
			t.Errorf("%s: trace %s parent %s, want trace %s parent %s (%s)", pc[0], telemetrytest.Hex(s.GetTraceId()),
				telemetrytest.Hex(s.GetParentSpanId()), tid, want, pc[1])
		}
	}
	if svc := rcv.Service(find("odek subagent")); svc != "odek" {
		t.Errorf("child's service.name = %q", svc)
	}
}
