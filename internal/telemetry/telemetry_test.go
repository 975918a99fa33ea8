package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/trace"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    func(telemetry.Config) bool
		wantErr string
	}{
		{"nothing set is off", nil, func(c telemetry.Config) bool { return !c.Enabled }, ""},
		{"base endpoint gets /v1/traces", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"},
			func(c telemetry.Config) bool {
				return c.Enabled && c.Endpoint == "http://c:4318/v1/traces" && c.Protocol == telemetry.ProtocolHTTP
			}, ""},
		{"traces endpoint wins and is used as is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/x"},
			func(c telemetry.Config) bool { return c.Endpoint == "https://b/x" }, ""},
		{"grpc keeps the base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			func(c telemetry.Config) bool {
				return c.Endpoint == "http://c:4317" && c.Protocol == telemetry.ProtocolGRPC
			}, ""},
		{"exporter otlp alone uses the default endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			func(c telemetry.Config) bool { return c.Enabled && c.Endpoint == "http://localhost:4318/v1/traces" }, ""},
		{"sdk disabled wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
			func(c telemetry.Config) bool { return !c.Enabled }, ""},
		{"exporter none wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
			func(c telemetry.Config) bool { return !c.Enabled }, ""},
		{"service, resource, sampler, headers, capture", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SERVICE_NAME": "w1",
			"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod, team=a%20b", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
			"OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%3Dcret,x=1",
			"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true", "OTEL_BSP_MAX_QUEUE_SIZE": "64", "OTEL_EXPORTER_OTLP_TIMEOUT": "1500",
		}, func(c telemetry.Config) bool {
			return c.ServiceName == "w1" && len(c.Resource) == 2 && c.Resource[1].Value == "a b" && c.SamplerArg == 0.25 &&
				c.Headers["api-key"] == "s=cret" && c.CaptureContent && c.QueueSize == 64 && c.Timeout == 1500*time.Millisecond
		}, ""},
		{"service.name from resource", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=r"},
			func(c telemetry.Config) bool { return c.ServiceName == "r" }, ""},
		{"bad protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, nil, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, nil, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"bad exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, nil, "OTEL_TRACES_EXPORTER"},
		{"bad sampler", map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}, nil, "OTEL_TRACES_SAMPLER"},
		{"bad ratio", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"queue over the limit", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "99999999"}, nil, "OTEL_BSP_MAX_QUEUE_SIZE"},
		{"header without =", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, nil, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header with newline", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b%0D%0Ax: y"}, nil, "control character"},
		{"headers too long", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=" + strings.Repeat("b", telemetry.MaxHeaderBytes)}, nil, "limit 8192"},
		{"capture not a bool", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes"}, nil, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := telemetry.FromEnv(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, telemetry.ErrConfig) {
					t.Fatalf("err = %v, want ErrConfig naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				t.Fatalf("config = %+v", c)
			}
		})
	}
}

// Off, the helpers allocate nothing and the context passes through.
func TestOffAllocatesNothing(t *testing.T) {
	if telemetry.On() {
		t.Fatal("tracing on at test start")
	}
	ctx := context.Background()
	n := testing.AllocsPerRun(1000, func() {
		c, s := telemetry.StartTool(ctx, "shell", "call-1")
		s.String(telemetry.KeyToolName, "shell")
		s.Usage(10, 20, 5)
		s.Content(telemetry.KeyToolArguments, "ls")
		s.Fail("tool_error", nil)
		s.End()
		if c != ctx {
			t.Fatal("context changed while off")
		}
		_, s = telemetry.StartChat(c, "m", "p")
		s.End()
	})
	if n != 0 {
		t.Fatalf("off path allocates %v times per call, want 0", n)
	}
	if telemetry.ToMap(ctx) != nil || telemetry.Env(ctx) != nil {
		t.Fatal("carriers produced a trace from an empty context")
	}
}

func BenchmarkStartOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := telemetry.StartTool(ctx, "shell", "call-1")
		s.Usage(10, 20, 5)
		s.End()
	}
}

// sinkCollector accepts OTLP/HTTP exports and discards them: the cost
// measured is odek's and the SDK's, not a decoder's.
func sinkCollector(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/v1/traces"
}

func BenchmarkStartOn(b *testing.B) {
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: sinkCollector(b)}, telemetry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := telemetry.StartTool(ctx, "shell", "call-1")
		s.Usage(10, 20, 5)
		s.End()
	}
	b.ReportMetric(float64(p.Stats().Dropped), "dropped")
}

func TestExportGenAIAndContent(t *testing.T) {
	r := newReceiver(t)
	red := redact.New()
	red.AddValue("sk-live-0123456789abcdef")
	for _, capture := range []bool{false, true} {
		t.Run(map[bool]string{false: "capture off", true: "capture on"}[capture], func(t *testing.T) {
			p := setup(t, r, func(c *telemetry.Config) { c.CaptureContent = capture; c.MaxAttrBytes = 64 },
				telemetry.Options{Service: "odek-test", Redactor: red})
			ctx, run := telemetry.StartAgent(context.Background(), "run-1", "sess-1", "gpt-x")
			cctx, chat := telemetry.StartChat(ctx, "gpt-x", "openai")
			chat.Usage(100, 20, 80)
			chat.Content(telemetry.KeyInputMessages, "my key is sk-live-0123456789abcdef "+strings.Repeat("é", 100))
			chat.End()
			_, tool := telemetry.StartTool(cctx, "shell", "c1")
			tool.Fail("tool_error", errors.New("exit 1"))
			tool.End()
			run.End()
			spans := flush(t, r, p)
			a, c, tl := byName(spans, "invoke_agent odek"), byName(spans, "chat gpt-x"), byName(spans, "execute_tool shell")
			if a == nil || c == nil || tl == nil {
				t.Fatalf("spans = %v", spans)
			}
			if hexID(c.GetParentSpanId()) != hexID(a.GetSpanId()) || hexID(tl.GetParentSpanId()) != hexID(c.GetSpanId()) {
				t.Fatal("parent links wrong")
			}
			for k, want := range map[string]any{telemetry.KeyOperation: "chat", telemetry.KeyRequestModel: "gpt-x",
				telemetry.KeyInputTokens: int64(100), telemetry.KeyOutputTokens: int64(20), telemetry.KeyCachedTokens: int64(80), telemetry.KeyProvider: "openai"} {
				if got, _ := attr(c, k); got != want {
					t.Errorf("chat %s = %v, want %v", k, got, want)
				}
			}
			if got, _ := attr(a, telemetry.KeyConversationID); got != "sess-1" {
				t.Errorf("conversation id = %v", got)
			}
			if got, _ := attr(tl, telemetry.KeyToolName); got != "shell" {
				t.Errorf("tool name = %v", got)
			}
			if got, _ := attr(tl, telemetry.KeyErrorType); got != "tool_error" || tl.GetStatus().GetMessage() != "exit 1" {
				t.Errorf("tool failure = %v %v", got, tl.GetStatus())
			}
			content, ok := attr(c, telemetry.KeyInputMessages)
			if ok != capture {
				t.Fatalf("content present = %v with capture %v", ok, capture)
			}
			if capture {
				s := content.(string)
				if strings.Contains(s, "sk-live") || len(s) > 64 || !strings.HasPrefix(s, "my key is ") {
					t.Fatalf("captured content not redacted and clipped: %q", s)
				}
			}
			r.Reset()
			_ = p.Shutdown(context.Background())
		})
	}
}

// A collector that never answers costs the caller nothing: End returns at
// once, spans past the queue are dropped and counted, Shutdown gives up
// when its context ends.
func TestDeadCollectorNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: hung.URL + "/v1/traces",
		QueueSize: 8, BatchSize: 2, ScheduleWait: time.Millisecond, Timeout: time.Hour}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for range n {
		_, s := telemetry.StartTool(context.Background(), "shell", "")
		s.End()
	}
	st := p.Stats()
	if st.Dropped == 0 || st.Queued+st.Dropped != n {
		t.Fatalf("stats = %+v, want drops and queued+dropped = %d", st, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = p.Shutdown(ctx) // returns once ctx ends although the export hangs
	if telemetry.On() {
		t.Fatal("still on after Shutdown")
	}
	if st := p.Stats(); st.Exported != 0 {
		t.Fatalf("exported %d spans to a collector that never answered", st.Exported)
	}
}

func TestCarriers(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := telemetry.FromMap(context.Background(), map[string]string{"traceparent": tp, "tracestate": "odek=1"})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("span context = %v", sc)
	}
	if m := telemetry.ToMap(ctx); m["traceparent"] != tp || m["tracestate"] != "odek=1" {
		t.Fatalf("ToMap = %v", m)
	}
	environ := telemetry.WithEnv(ctx, []string{"PATH=/bin", "TRACEPARENT=00-old", "TRACEPARENTX=keep", "TRACESTATE=old"})
	want := []string{"PATH=/bin", "TRACEPARENTX=keep", "TRACEPARENT=" + tp, "TRACESTATE=odek=1"}
	if strings.Join(environ, " ") != strings.Join(want, " ") {
		t.Fatalf("WithEnv = %v", environ)
	}
	back := telemetry.ContextFromEnv(context.Background(), env(map[string]string{"TRACEPARENT": tp}))
	if trace.SpanContextFromContext(back).TraceID() != sc.TraceID() {
		t.Fatal("ContextFromEnv lost the trace")
	}
	meta := telemetry.InjectMeta(ctx, map[string]any{"progressToken": 1})
	if meta["traceparent"] != tp || meta["progressToken"] != 1 {
		t.Fatalf("meta = %v", meta)
	}
	if trace.SpanContextFromContext(telemetry.FromMeta(context.Background(), meta)).TraceID() != sc.TraceID() {
		t.Fatal("FromMeta lost the trace")
	}
	h := http.Header{}
	telemetry.InjectHTTP(ctx, h)
	if h.Get("traceparent") != tp || trace.SpanContextFromContext(telemetry.FromHTTP(context.Background(), h)).TraceID() != sc.TraceID() {
		t.Fatalf("headers = %v", h)
	}
	for name, m := range map[string]map[string]string{
		"malformed": {"traceparent": "00-zz-00f067aa0ba902b7-01"},
		"zero id":   {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		"oversized": {"traceparent": tp + strings.Repeat(" ", telemetry.MaxCarrierValue)},
	} {
		if trace.SpanContextFromContext(telemetry.FromMap(context.Background(), m)).IsValid() {
			t.Errorf("%s traceparent accepted", name)
		}
	}
}

func FuzzFromMap(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", strings.Repeat("k=v,", 40))
	f.Fuzz(func(t *testing.T, tp, ts string) {
		ctx := telemetry.FromMap(context.Background(), map[string]string{"traceparent": tp, "tracestate": ts})
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			return
		}
		if len(tp) > telemetry.MaxCarrierValue {
			t.Fatalf("oversized traceparent accepted (%d bytes)", len(tp))
		}
		m := telemetry.ToMap(ctx) // what we pass on is well-formed
		if len(m["traceparent"]) != 55 {
			t.Fatalf("re-injected traceparent %q", m["traceparent"])
		}
	})
}

func FuzzParseHeaders(f *testing.F) {
	f.Add("a=b,c=d%20e")
	f.Add("=x,,")
	f.Add("k=%zz")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := telemetry.ParseHeaders(s)
		if err != nil {
			return
		}
		for k, v := range h {
			if k == "" || strings.ContainsAny(k, " \r\n:") || strings.ContainsAny(v, "\r\n\x00") {
				t.Fatalf("accepted header %q: %q", k, v)
			}
		}
		if len(s) > telemetry.MaxHeaderBytes {
			t.Fatalf("accepted %d bytes", len(s))
		}
	})
}

func FuzzParseResource(f *testing.F) {
	f.Add("service.name=odek,deployment.environment=prod")
	f.Add(strings.Repeat("a=b,", telemetry.MaxResourceAttrs+1))
	f.Fuzz(func(t *testing.T, s string) {
		kvs, err := telemetry.ParseResource(s)
		if err == nil && len(kvs) > telemetry.MaxResourceAttrs {
			t.Fatalf("%d entries accepted", len(kvs))
		}
	})
}

func TestLogHook(t *testing.T) {
	var buf bytes.Buffer
	log := logrus.New()
	log.SetOutput(&buf)
	log.SetFormatter(&logrus.JSONFormatter{})
	log.AddHook(telemetry.LogHook{})
	ctx := telemetry.FromMap(context.Background(), map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	log.WithContext(ctx).WithField("job_id", "j").Info("claimed")
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if first["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || first["span_id"] != "00f067aa0ba902b7" || first["job_id"] != "j" {
		t.Fatalf("line = %v", first)
	}
	if _, ok := second["trace_id"]; ok {
		t.Fatalf("line without a context got a trace id: %v", second)
	}
	if f := telemetry.LogFields(ctx); f["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("LogFields = %v", f)
	}
}

// The event observer rebuilds the run's spans from a real Emitter's
// events and stamps each event with its span's ids.
func TestEventSpans(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, nil, telemetry.Options{})
	root, job := telemetry.StartConsumer(context.Background(), "odek.job")
	var got []events.Event
	sink := telemetry.EventSpans(root, events.SinkFunc(func(ev *events.Event) error {
		got = append(got, *ev)
		return nil
	}))
	em := events.NewEmitter("run-1", sink, events.Options{})
	em.SetSessionID("chat-42")
	em.EmitPayload(0, "", events.RunStartedData{Model: "qwen"})
	em.EmitPayload(1, "shell", events.ToolCallStartedData{CallID: "c1"})
	em.EmitPayload(1, "shell", events.ToolCallFailedData{CallID: "c1", Duration: time.Millisecond, ErrorClass: "timeout"})
	em.EmitPayload(1, "", events.IterationCompletedData{CallDuration: 300 * time.Millisecond, TTFT: 100 * time.Millisecond, CallInputTokens: 50, CallOutputTokens: 7})
	em.EmitPayload(2, "", events.IterationCompletedData{CallDuration: 200 * time.Millisecond, CallInputTokens: 60, CallOutputTokens: 9})
	d := events.RunCompletedData{Duration: time.Second, InputTokens: 110, OutputTokens: 16, CachedInputTokens: 40}
	if err := em.Final(context.Background(), d.EventType(), d.Data()); err != nil {
		t.Fatal(err)
	}
	job.End()
	spans := flush(t, r, p)
	agent, tool := byName(spans, "invoke_agent odek"), byName(spans, "execute_tool shell")
	var chats int
	for _, s := range spans {
		if s.GetName() == "chat qwen" {
			chats++
			if hexID(s.GetParentSpanId()) != hexID(agent.GetSpanId()) {
				t.Error("chat span not under the agent span")
			}
		}
	}
	if agent == nil || tool == nil || chats != 2 {
		t.Fatalf("spans: %v", spans)
	}
	if hexID(agent.GetParentSpanId()) != job.SpanContext().SpanID().String() || hexID(tool.GetParentSpanId()) != hexID(agent.GetSpanId()) {
		t.Fatal("parent links wrong")
	}
	if v, _ := attr(agent, telemetry.KeyConversationID); v != "chat-42" {
		t.Errorf("conversation = %v", v)
	}
	if v, _ := attr(agent, telemetry.KeyCachedTokens); v != int64(40) {
		t.Errorf("cached = %v", v)
	}
	if v, _ := attr(tool, telemetry.KeyErrorType); v != "timeout" {
		t.Errorf("tool error.type = %v", v)
	}
	for _, ev := range got {
		if ev.TraceID != job.SpanContext().TraceID().String() || ev.SpanID == "" {
			t.Fatalf("event %s not stamped: %+v", ev.Type, ev)
		}
		want := hexID(agent.GetSpanId())
		if ev.Type == events.ToolCallStarted || ev.Type == events.ToolCallFailed {
			want = hexID(tool.GetSpanId())
		}
		if ev.SpanID != want {
			t.Errorf("event %s span = %s, want %s", ev.Type, ev.SpanID, want)
		}
	}
}

// The cost of tracing one model call with one tool call, as the event
// observer pays it on the Emitter's goroutine: off (the sink is returned
// as is) and on towards a live collector.
func BenchmarkEventSpansPerModelCall(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			if on {
				p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: sinkCollector(b)}, telemetry.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Shutdown(context.Background())
			}
			now := time.Now()
			evs := []events.Event{
				{Type: events.RunStarted, RunID: "r", Timestamp: now, Data: events.RunStartedData{Model: "m"}.Data()},
				{Type: events.ToolCallStarted, Iteration: 1, Tool: "shell", Timestamp: now, Data: events.ToolCallStartedData{CallID: "c"}.Data()},
				{Type: events.ToolCallCompleted, Iteration: 1, Tool: "shell", Timestamp: now, Data: events.ToolCallCompletedData{CallID: "c"}.Data()},
				{Type: events.IterationCompleted, Iteration: 1, Timestamp: now, Data: events.IterationCompletedData{CallDuration: time.Second, CallInputTokens: 9}.Data()},
				{Type: events.RunCompleted, Timestamp: now, Data: events.RunCompletedData{InputTokens: 9}.Data()},
			}
			next := events.SinkFunc(func(*events.Event) error { return nil })
			b.ReportAllocs()
			for b.Loop() {
				sink := telemetry.EventSpans(context.Background(), next)
				for i := range evs {
					ev := evs[i]
					_ = sink.Write(&ev)
				}
			}
		})
	}
}
