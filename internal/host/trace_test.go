package host

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// A run traced in place (issue 24): one invoke_agent span under the
// caller's, one chat span per model call with the call's tokens (cached
// ones included) and time to first token, one execute_tool span per tool
// call, the shell command continuing the tool's span, the events stamped
// with the run's span. The caller also puts telemetry.EventSpans in front
// of its sink, as the worker and `odek run` do: it must rebuild nothing
// (without the stamped events every span here would appear twice).
func TestRunIsTracedInPlace(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint(), ScheduleWait: 10 * time.Millisecond},
		telemetry.Options{Service: "odek-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())

	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "shell", Arguments: `{"command":"echo tp=$TRACEPARENT"}`}),
		llmtest.Turn{Content: "done", Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 5, CachedTokens: 60}})
	cfg := load(t, `{"model":"m1","base_url":"`+srv.URL+`","api_key":"k","dangerous":{"non_interactive":"allow"}}`, "")
	h, err := New(context.Background(), cfg, HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	ctx, run := telemetry.Start(context.Background(), "odek.job.run")
	var mu sync.Mutex
	var evs []events.Event
	sink := telemetry.EventSpans(ctx, events.SinkFunc(func(ev *events.Event) error {
		mu.Lock()
		evs = append(evs, *ev)
		mu.Unlock()
		return nil
	}))
	oc, err := h.Run(ctx, RunSpec{Goal: "say the secret word", WorkDir: t.TempDir(), Sink: sink, Signals: func(agent.SignalEvent) {}})
	run.End()
	if err != nil || oc.Answer != "done" {
		t.Fatalf("run: %+v %v", oc, err)
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	named := func(name string) []*tracepb.Span {
		var out []*tracepb.Span
		for _, s := range spans {
			if s.GetName() == name {
				out = append(out, s)
			}
		}
		return out
	}
	agents, chats, tools := named("invoke_agent odek"), named("chat m1"), named("execute_tool shell")
	if len(agents) != 1 || len(chats) != 2 || len(tools) != 1 {
		t.Fatalf("%d agent, %d chat, %d tool spans; want 1, 2, 1 (no rebuilt duplicates)", len(agents), len(chats), len(tools))
	}
	ag, tool := agents[0], tools[0]
	tid, aid := telemetrytest.Hex(ag.GetTraceId()), telemetrytest.Hex(ag.GetSpanId())
	if tid != run.SpanContext().TraceID().String() || telemetrytest.Hex(ag.GetParentSpanId()) != run.SpanContext().SpanID().String() {
		t.Fatal("agent span not under the caller's span")
	}
	for _, s := range append(chats, tool) {
		if telemetrytest.Hex(s.GetParentSpanId()) != aid {
			t.Errorf("%s not under the agent span", s.GetName())
		}
	}
	if v, _ := telemetrytest.Attr(tool, telemetry.KeyToolCallID); v != "c1" {
		t.Errorf("tool call id = %v", v)
	}
	if v, _ := telemetrytest.Attr(ag, telemetry.KeyInputTokens); v != int64(oc.Usage.PromptTokens) || v == int64(0) {
		t.Errorf("agent span input tokens = %v, want the run's %d", v, oc.Usage.PromptTokens)
	}
	last := chats[0]
	if chats[1].GetStartTimeUnixNano() > last.GetStartTimeUnixNano() {
		last = chats[1]
	}
	for k, want := range map[string]any{telemetry.KeyInputTokens: int64(100), telemetry.KeyOutputTokens: int64(5), telemetry.KeyCachedTokens: int64(60), telemetry.KeyOperation: "chat"} {
		if got, _ := telemetrytest.Attr(last, k); got != want {
			t.Errorf("last chat %s = %v, want %v", k, got, want)
		}
	}
	if v, ok := telemetrytest.Attr(last, telemetry.KeyTTFT); !ok || v.(float64) <= 0 {
		t.Errorf("time to first chunk = %v", v)
	}
	if len(last.GetEvents()) != 1 || last.GetEvents()[0].GetName() != "gen_ai.first_chunk" {
		t.Errorf("chat events %v", last.GetEvents())
	}
	// The shell command ran under the tool's span.
	want := "tp=00-" + tid + "-" + telemetrytest.Hex(tool.GetSpanId()) + "-01"
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Messages; !strings.Contains(got[len(got)-1].Content, want) {
		t.Errorf("shell output %q, want %q", got[len(got)-1].Content, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for _, ev := range evs {
		if ev.TraceID != tid || ev.SpanID != aid {
			t.Errorf("event %s stamped %s/%s, want the agent span", ev.Type, ev.TraceID, ev.SpanID)
		}
	}
	for _, s := range spans {
		for _, a := range s.GetAttributes() {
			if strings.Contains(a.GetValue().GetStringValue(), "secret word") {
				t.Errorf("span %s carries the prompt in %s with capture off", s.GetName(), a.GetKey())
			}
		}
	}
}

// A traced run whose front end writes its events nowhere (`odek run
// --quiet`, which hands over only EventSpans over a nil sink) gets no
// event sink, so the loop builds no event; the run's span takes its
// outcome from the run's result: the token totals, or the failure's
// class with status Error.
func TestTracedRunWithoutSinkBuildsNoEvents(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint()}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "completed", true: "failed"}[fail], func(t *testing.T) {
			turns := []llmtest.Turn{
				llmtest.CallTools(llmtest.Call{ID: "c1", Name: "shell", Arguments: `{"command":"true"}`}),
				{Content: "done", Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 5, CachedTokens: 60}},
			}
			if fail {
				turns[1] = llmtest.Turn{Status: 400, ErrorMessage: "no such model"}
			}
			srv := llmtest.New(t, turns...)
			cfg := load(t, `{"model":"m1","base_url":"`+srv.URL+`","api_key":"k","dangerous":{"non_interactive":"allow"}}`, "")
			h, err := New(context.Background(), cfg, HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx := context.Background()
			rt, err := h.Prepare(ctx, RunSpec{Goal: "g", WorkDir: t.TempDir(), Sink: telemetry.EventSpans(ctx, nil), Signals: func(agent.SignalEvent) {}})
			if err != nil {
				t.Fatal(err)
			}
			if rt.Agent.EventSink != nil {
				t.Fatalf("event sink %T installed for a run whose events nobody reads", rt.Agent.EventSink)
			}
			res, runErr := rt.RunAgent(ctx, rt.Agent, "g")
			_ = rt.Close()
			if (runErr != nil) != fail {
				t.Fatalf("run error %v", runErr)
			}
			if err := p.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			var ag *tracepb.Span
			for _, s := range rcv.Spans() {
				if s.GetName() == "invoke_agent odek" {
					if v, _ := telemetrytest.Attr(s, telemetry.KeyRunID); v == res.RunID {
						ag = s
					}
				}
			}
			if ag == nil {
				t.Fatal("no agent span for the run")
			}
			in, _ := telemetrytest.Attr(ag, telemetry.KeyInputTokens)
			class, _ := telemetrytest.Attr(ag, telemetry.KeyErrorType)
			if !fail {
				if in != int64(res.Usage.PromptTokens) || in == int64(0) || class != nil || ag.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
					t.Fatalf("completed run's span: input tokens %v, error.type %v, status %v", in, class, ag.GetStatus())
				}
				return
			}
			if want := agent.ErrorClass(runErr); class != want || ag.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Fatalf("failed run's span: error.type %v (want %s), status %v", class, want, ag.GetStatus())
			}
			if strings.Contains(ag.GetStatus().GetMessage(), "no such model") {
				t.Errorf("the run's error text reached the span: %q", ag.GetStatus().GetMessage())
			}
		})
	}
}

// With content capture on (an operator's opt-in), a model call's span
// carries the request's messages and the answer, masked by the redactor:
// a secret the redactor knows never reaches the collector.
func TestTracedModelCapturesMaskedContent(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	red := redact.New()
	red.AddValue("sk-captured-secret-0123456789")
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint(), CaptureContent: true},
		telemetry.Options{Redactor: red})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	srv := llmtest.New(t, llmtest.Reply("the answer sk-captured-secret-0123456789"))
	client, err := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := traceModel(client, "m1")
	if _, err := m.Complete(context.Background(), agent.Request{Model: "m1", Messages: []agent.Message{{Role: agent.RoleUser, Content: "the question"}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	chat := telemetrytest.ByName(rcv.Spans(), "chat m1")
	if chat == nil {
		t.Fatal("no chat span")
	}
	in, _ := telemetrytest.Attr(chat, telemetry.KeyInputMessages)
	out, _ := telemetrytest.Attr(chat, telemetry.KeyOutputMessages)
	if s, _ := in.(string); !strings.Contains(s, "the question") {
		t.Errorf("input messages %v", in)
	}
	if s, _ := out.(string); !strings.Contains(s, "the answer") || strings.Contains(s, "sk-captured-secret") {
		t.Errorf("output messages %v: want the answer, masked", out)
	}
}
