package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// liteSpan is the span of one model call or one tool call: the two spans
// of every loop iteration. The SDK's span (sdktrace) costs about a dozen
// allocations and two locks a span — the span, its attribute slice grown
// per SetAttributes, a map to deduplicate the attributes at End, a
// snapshot copied for the processor — which in `odek run` added more CPU
// per model call than the 5 % (docs/BENCHMARKS.md, tracing on,
// round 3). A liteSpan is one allocation: the attributes and events live
// in fixed arrays, a key set twice is replaced in place, and the span
// itself is what the export queue encodes (spanData), with no snapshot.
//
// It is a full trace.Span: it goes into the context (ContextWithSpan), so
// the carriers, a shell's TRACEPARENT, an MCP request's _meta and the SDK
// spans started under it see its ids; the provider's sampler decides
// whether it records (a span the sampler would not record and sample is
// left to the SDK), and its ids come from the same 64/128-bit random
// space. Its limits: liteMaxAttrs attributes and liteMaxEvents events
// (more are counted as dropped and exported as such), no links.
type liteSpan struct {
	embedded.Span

	p      *Provider
	sc     trace.SpanContext
	parent trace.SpanContext
	kind   trace.SpanKind
	start  time.Time

	mu       sync.Mutex
	name     string
	end      time.Time
	ended    bool
	attrs    []attribute.KeyValue // in attrBuf until it outgrows it
	dropAttr int
	events   []sdktrace.Event // in evBuf until it outgrows it
	dropEv   int
	dropLink int
	status   sdktrace.Status

	// Room inline for what a span of the loop carries: a chat span sets
	// 8 attributes (10 when retried and failed; 13 with content capture), a tool
	// span 5, and one event (the first chunk). More grow on the heap, up
	// to liteMaxAttrs and liteMaxEvents. Inline room is memory every span
	// zeroes and the cache fetches, whether used or not: the span fits
	// the 1 KiB size class, where 16 attributes and 2 events took 1.5 KiB.
	attrBuf [9]attribute.KeyValue
	evBuf   [1]sdktrace.Event
}

const (
	liteMaxAttrs  = 32
	liteMaxEvents = 8
)

// liteScope is the instrumentation scope of odek's spans, as the SDK's
// tracer (Provider.tracer) reports it.
var liteScope = instrumentation.Scope{Name: ScopeName}

// startLite starts a liteSpan under ctx's span, or, when the sampler
// would not record and sample it, an SDK span (which then asks again).
func (p *Provider) startLite(ctx context.Context, name string, kind trace.SpanKind) (context.Context, Span) {
	psc := trace.SpanContextFromContext(ctx)
	tid := psc.TraceID()
	if !tid.IsValid() {
		tid = newTraceID()
	}
	// The default samplers decide from the parent alone, as the SDK's
	// ParentBased(AlwaysSample()) and AlwaysSample() do, without the call
	// that would walk ctx for the parent a second time.
	var res sdktrace.SamplingResult
	switch {
	case p.sampling == samplingAlways || p.sampling == samplingParent && (!psc.IsValid() || psc.IsSampled()):
		res = sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: psc.TraceState()}
	case p.sampling == samplingParent: // a parent not sampled: not recorded
		return p.start(ctx, name, kind, time.Time{})
	default:
		res = p.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Name: name, Kind: kind})
		if res.Decision != sdktrace.RecordAndSample {
			return p.start(ctx, name, kind, time.Time{})
		}
	}
	s := &liteSpan{
		p: p, parent: psc, kind: kind, name: name, start: time.Now(),
		sc: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: newSpanID(),
			TraceFlags: psc.TraceFlags() | trace.FlagsSampled, TraceState: res.Tracestate}),
	}
	if len(res.Attributes) > 0 {
		s.SetAttributes(res.Attributes...)
	}
	return trace.ContextWithSpan(ctx, s), Span{s: s, p: p}
}

func newTraceID() (t trace.TraceID) {
	for !t.IsValid() {
		hi, lo := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			t[i], t[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
		}
	}
	return t
}

func newSpanID() (s trace.SpanID) {
	for !s.IsValid() {
		v := rand.Uint64()
		for i := range 8 {
			s[i] = byte(v >> (56 - 8*i))
		}
	}
	return s
}

// End ends the span and queues it for export; later calls do nothing.
func (s *liteSpan) End(options ...trace.SpanEndOption) {
	var at time.Time
	if len(options) > 0 {
		c := trace.NewSpanEndConfig(options...)
		at = c.Timestamp()
	}
	if at.IsZero() {
		at = time.Now()
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.end = true, at
	s.mu.Unlock()
	s.p.q.addLite(s) // encoded now; after End nothing changes the span, read unlocked
}

// AddEvent adds an event (its time now unless given).
func (s *liteSpan) AddEvent(name string, options ...trace.EventOption) {
	c := trace.NewEventConfig(options...)
	s.addEvent(name, c.Timestamp(), c.Attributes())
}

func (s *liteSpan) addEvent(name string, at time.Time, attrs []attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if len(s.events) == liteMaxEvents {
		s.dropEv++
		return
	}
	if s.events == nil {
		s.events = s.evBuf[:0]
	}
	s.events = append(s.events, sdktrace.Event{Name: name, Attributes: attrs, Time: at})
}

// AddLink counts the link as dropped: a liteSpan carries none.
func (s *liteSpan) AddLink(trace.Link) {
	s.mu.Lock()
	if !s.ended {
		s.dropLink++
	}
	s.mu.Unlock()
}

func (s *liteSpan) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

// RecordError adds an "exception" event, as the SDK does.
func (s *liteSpan) RecordError(err error, options ...trace.EventOption) {
	if err == nil {
		return
	}
	options = append(options, trace.WithAttributes(attribute.String("exception.type", fmt.Sprintf("%T", err)),
		attribute.String("exception.message", clipText(err.Error(), s.p.maxAttr))))
	s.AddEvent("exception", options...)
}

func (s *liteSpan) SpanContext() trace.SpanContext { return s.sc }

// SetStatus follows the SDK: Ok is final, Unset changes nothing, and a
// description is kept only with Error.
func (s *liteSpan) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || code == codes.Unset || s.status.Code == codes.Ok {
		return
	}
	st := sdktrace.Status{Code: code}
	if code == codes.Error {
		st.Description = description
	}
	s.status = st
}

func (s *liteSpan) SetName(name string) {
	s.mu.Lock()
	if !s.ended {
		s.name = clipText(name, 256)
	}
	s.mu.Unlock()
}

// SetAttributes sets kv: a key already set is replaced in place (the
// export carries each key once, as the SDK's deduplication makes it),
// string values are clipped to the configured size, and past liteAttrs
// keys the rest are counted as dropped.
func (s *liteSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
next:
	for _, a := range kv {
		if !a.Valid() {
			s.dropAttr++
			continue
		}
		if a.Value.Type() == attribute.STRING {
			if v := a.Value.AsString(); len(v) > s.p.maxAttr {
				a.Value = attribute.StringValue(clipText(v, s.p.maxAttr))
			}
		}
		for i := range s.attrs {
			if s.attrs[i].Key == a.Key {
				s.attrs[i] = a
				continue next
			}
		}
		if len(s.attrs) == liteMaxAttrs {
			s.dropAttr++
			continue
		}
		if s.attrs == nil {
			s.attrs = s.attrBuf[:0]
		}
		s.attrs = append(s.attrs, a)
	}
}

func (s *liteSpan) TracerProvider() trace.TracerProvider { return s.p.tp }

// What the encoder reads (spanData), once the span has ended.

func (s *liteSpan) Parent() trace.SpanContext                   { return s.parent }
func (s *liteSpan) Name() string                                { return s.name }
func (s *liteSpan) SpanKind() trace.SpanKind                    { return s.kind }
func (s *liteSpan) StartTime() time.Time                        { return s.start }
func (s *liteSpan) EndTime() time.Time                          { return s.end }
func (s *liteSpan) Attributes() []attribute.KeyValue            { return s.attrs }
func (s *liteSpan) DroppedAttributes() int                      { return s.dropAttr }
func (s *liteSpan) Events() []sdktrace.Event                    { return s.events }
func (s *liteSpan) DroppedEvents() int                          { return s.dropEv }
func (s *liteSpan) Links() []sdktrace.Link                      { return nil }
func (s *liteSpan) DroppedLinks() int                           { return s.dropLink }
func (s *liteSpan) Status() sdktrace.Status                     { return s.status }
func (s *liteSpan) Resource() *resource.Resource                { return s.p.res }
func (s *liteSpan) InstrumentationScope() instrumentation.Scope { return liteScope }
