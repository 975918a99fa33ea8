package telemetry

import (
	"context"
	"time"

	"github.com/odekrun/odek/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ContextWithSpan returns ctx with s as its current span, so that spans
// started from it (a model call, a tool call) are s's children and
// carriers pass s on. The zero Span leaves ctx as it is.
func ContextWithSpan(ctx context.Context, s Span) context.Context {
	if s.s == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, s.s)
}

// RunSink returns the sink for the events of a run traced in place (its
// agent span started with StartAgent, its model and tool spans where the
// calls happen): it stamps every event with agent's ids before next sees
// it. A stamped event is what tells EventSpans further down not to rebuild
// spans from it, so a run is never counted twice. The run's outcome is
// not read from the events: the caller puts it on agent with RunDone, so
// that a run whose events nobody else reads needs no sink at all. With a
// nil next RunSink returns nil (install no sink: the agent loop then
// builds no event), with the zero Span next as is.
func RunSink(agent Span, next events.Sink) events.Sink {
	if agent.s == nil || next == nil {
		return next
	}
	sc := agent.s.SpanContext()
	return &runSink{next: next, tid: sc.TraceID().String(), sid: sc.SpanID().String()}
}

type runSink struct {
	next     events.Sink
	tid, sid string
}

func (r *runSink) Write(ev *events.Event) error {
	if ev.TraceID == "" {
		ev.TraceID, ev.SpanID = r.tid, r.sid
	}
	return r.next.Write(ev)
}

// InPlace returns the sink a run traced in place should hand RunSink,
// given the one its front end built: without EventSpans' layer, which
// would only pass the run's stamped events on. A front end that traces
// and writes events nowhere else (`odek run --quiet`) gets nil back, and
// the run then builds no event at all: building every event (a map each)
// only for the trace to read its outcome cost a fifth of what tracing
// added to a model call (docs/BENCHMARKS.md, issue 24).
func InPlace(sink events.Sink) events.Sink {
	if e, ok := sink.(*eventSpans); ok {
		return e.next
	}
	return sink
}

// RunDone puts a finished run's outcome on its agent span (StartAgent),
// what run_completed or run_failed would say: the token totals (cached
// ones included) of a run that succeeded, or status Error with error.type
// = class (agent.ErrorClass of the run's error; the error's text is left
// out, as the event leaves it out) for one that failed. conv is the run's
// session id when StartAgent did not know it ("" leaves it).
func (s Span) RunDone(input, output, cached int, conv, class string) {
	if s.s == nil || !s.s.IsRecording() {
		return
	}
	b := getAttrs()
	if conv != "" {
		b.add(attribute.String(KeyConversationID, clipText(conv, 256)))
	}
	if class == "" {
		b.usage(input, output, cached)
		s.set(b)
		return
	}
	kv, msg := s.failure(class, nil)
	b.add(kv)
	s.set(b)
	s.s.SetStatus(codes.Error, msg)
}

// ChatCall is what a model call's span records when it ends (EndChat).
type ChatCall struct {
	// ResponseModel is the model the endpoint says answered; "" leaves it
	// out.
	ResponseModel string
	// Input, Output and Cached are the call's token counts (Cached: the
	// part of Input read from the provider's prompt cache).
	Input, Output, Cached int
	// TTFT is the time from the (successful) request's start to the first
	// streamed delta, 0 when not measured; Took is that request's whole
	// duration. The first-chunk event is placed at end - Took + TTFT.
	TTFT, Took time.Duration
	// Attempts is the number of HTTP attempts, retries included.
	Attempts int
	// FinishReason is the provider's finish_reason.
	FinishReason string
}

// EndChat ends a model call's span (StartChat) with what the call
// reported; err (with class, see Span.Fail) marks it failed. The
// attributes reach the SDK in one call.
func (s Span) EndChat(c ChatCall, class string, err error) {
	if s.s == nil {
		return
	}
	if s.s.IsRecording() {
		b := getAttrs()
		if c.ResponseModel != "" {
			b.add(attribute.String(KeyResponseModel, clipText(c.ResponseModel, s.p.maxAttr)))
		}
		b.usage(c.Input, c.Output, c.Cached)
		if c.TTFT > 0 {
			b.add(attribute.Float64(KeyTTFT, c.TTFT.Seconds()))
			if c.Took >= c.TTFT {
				s.Event("gen_ai.first_chunk", time.Now().Add(-c.Took+c.TTFT))
			}
		}
		if c.Attempts > 1 {
			b.add(attribute.Int("odek.llm.attempts", c.Attempts))
		}
		if c.FinishReason != "" {
			b.add(s.p.finishReasons(c.FinishReason))
		}
		failed := err != nil || class != ""
		var msg string
		if failed {
			var kv attribute.KeyValue
			kv, msg = s.failure(class, err)
			b.add(kv)
		}
		s.set(b)
		if failed {
			s.s.SetStatus(codes.Error, msg)
		}
	}
	s.s.End()
}

// StartLinked starts an internal span named name under ctx's span with a
// link to the span carried in link (a job's Trace map, ToMap's form): the
// bot's delivery of a result links back to the update that asked for it.
// An empty or malformed link adds none.
func StartLinked(ctx context.Context, name string, link map[string]string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	if sc := trace.SpanContextFromContext(FromMap(context.Background(), link)); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, s := p.tracer.Start(ctx, clipText(name, 256), opts...)
	return ctx, Span{s: s, p: p}
}
