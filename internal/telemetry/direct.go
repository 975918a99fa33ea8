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
// it, and puts the run's outcome on agent from run_completed (the token
// totals, cached ones included) or run_failed (Error with its
// error_class). A stamped event is what tells EventSpans further down not
// to rebuild spans from it, so a run is never counted twice. With the zero
// Span it returns next as is.
func RunSink(agent Span, next events.Sink) events.Sink {
	if agent.s == nil {
		return next
	}
	sc := agent.s.SpanContext()
	return &runSink{agent: agent, next: next, tid: sc.TraceID().String(), sid: sc.SpanID().String()}
}

type runSink struct {
	agent    Span
	next     events.Sink
	tid, sid string
	conv     bool
}

func (r *runSink) Write(ev *events.Event) error {
	if ev.TraceID == "" {
		ev.TraceID, ev.SpanID = r.tid, r.sid
	}
	if ev.SessionID != "" && !r.conv {
		r.agent.String(KeyConversationID, ev.SessionID)
		r.conv = true
	}
	switch ev.Type {
	case events.RunStarted:
		var d events.RunStartedData
		d.Decode(ev.Data)
		if d.Model != "" {
			r.agent.String(KeyRequestModel, d.Model)
		}
	case events.RunCompleted:
		var d events.RunCompletedData
		d.Decode(ev.Data)
		r.agent.Usage(d.InputTokens, d.OutputTokens, d.CachedInputTokens)
	case events.RunFailed:
		var d events.RunFailedData
		d.Decode(ev.Data)
		r.agent.Fail(d.ErrorClass, nil)
	}
	if r.next == nil {
		return nil
	}
	return r.next.Write(ev)
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
