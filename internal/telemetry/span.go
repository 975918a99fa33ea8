package telemetry

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the OpenTelemetry GenAI semantic conventions, and
// odek's own (odek.*) where none applies.
const (
	KeyOperation      = "gen_ai.operation.name"
	KeyProvider       = "gen_ai.provider.name"
	KeyRequestModel   = "gen_ai.request.model"
	KeyResponseModel  = "gen_ai.response.model"
	KeyInputTokens    = "gen_ai.usage.input_tokens"
	KeyOutputTokens   = "gen_ai.usage.output_tokens"
	KeyCachedTokens   = "gen_ai.usage.cache_read.input_tokens"
	KeyTTFT           = "gen_ai.response.time_to_first_chunk" // seconds, double
	KeyToolName       = "gen_ai.tool.name"
	KeyToolCallID     = "gen_ai.tool.call.id"
	KeyToolType       = "gen_ai.tool.type"
	KeyConversationID = "gen_ai.conversation.id"
	KeyAgentName      = "gen_ai.agent.name"
	KeyAgentID        = "gen_ai.agent.id"
	KeyInputMessages  = "gen_ai.input.messages"
	KeyOutputMessages = "gen_ai.output.messages"
	KeyToolArguments  = "gen_ai.tool.call.arguments"
	KeyToolResult     = "gen_ai.tool.call.result"
	KeyErrorType      = "error.type"

	KeyJobID     = "odek.job.id"
	KeyChatID    = "odek.chat.id"
	KeyAttempt   = "odek.job.attempt"
	KeyRunID     = "odek.run.id"
	KeyWorker    = "odek.worker.name"
	KeyIteration = "odek.iteration"
	KeyStatus    = "odek.status"
)

// GenAI operation names (gen_ai.operation.name).
const (
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
	OpInvokeAgent = "invoke_agent"
)

// Span is a span of odek's, or nothing: the zero Span (what every starter
// returns while tracing is off) does nothing and costs nothing. Its
// setters take typed values so that a disabled call builds no attribute.
type Span struct {
	s trace.Span
	p *Provider
}

// Recording reports whether the span records; guard costly attribute
// building with it.
func (s Span) Recording() bool { return s.s != nil && s.s.IsRecording() }

// End ends the span now.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// EndAt ends the span at t (a span rebuilt from events).
func (s Span) EndAt(t time.Time) {
	if s.s != nil {
		s.s.End(trace.WithTimestamp(t))
	}
}

// SpanContext is the span's identity (invalid for the zero Span).
func (s Span) SpanContext() trace.SpanContext {
	if s.s == nil {
		return trace.SpanContext{}
	}
	return s.s.SpanContext()
}

// Fail marks the span failed: status Error with err's text (clipped) and
// error.type = class (a low-cardinality name: "timeout", "tool_error");
// empty class means "error". A nil err with an empty class does nothing.
func (s Span) Fail(class string, err error) {
	if s.s == nil || (err == nil && class == "") {
		return
	}
	kv, msg := s.failure(class, err)
	s.s.SetAttributes(kv)
	s.s.SetStatus(codes.Error, msg)
}

// failure is Fail's error.type attribute and status message.
func (s Span) failure(class string, err error) (attribute.KeyValue, string) {
	if class == "" {
		class = "error"
	}
	msg := class
	if err != nil {
		msg = clipText(err.Error(), s.p.maxAttr)
	}
	return attribute.String(KeyErrorType, clipText(class, 128)), msg
}

// String sets a string attribute, clipped to the configured size.
func (s Span) String(key, v string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, clipText(v, s.p.maxAttr)))
	}
}

// Int sets an integer attribute.
func (s Span) Int(key string, v int64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int64(key, v))
	}
}

// Float sets a floating-point attribute.
func (s Span) Float(key string, v float64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Float64(key, v))
	}
}

// Usage sets the GenAI token counts; zero counts are left out.
func (s Span) Usage(input, output, cached int) {
	if s.s == nil {
		return
	}
	b := getAttrs()
	b.usage(input, output, cached)
	s.set(b)
}

// Capturing reports whether Content would record anything: guard the
// building of content (a conversion, a join) with it.
func (s Span) Capturing() bool { return s.s != nil && s.p.capture && s.s.IsRecording() }

// Content records text (a prompt, a completion, tool arguments) under key
// only when the operator turned capture on: redacted, then clipped.
func (s Span) Content(key, text string) {
	if s.s == nil || !s.p.capture || !s.s.IsRecording() {
		return
	}
	s.s.SetAttributes(attribute.String(key, clipText(s.p.red.String(text), s.p.maxAttr)))
}

// Event adds a timestamped event (time to first token) to the span.
func (s Span) Event(name string, at time.Time) {
	if ls, ok := s.s.(*liteSpan); ok { // no option to box
		ls.addEvent(name, at, nil)
	} else if s.s != nil {
		s.s.AddEvent(name, trace.WithTimestamp(at))
	}
}

// Start starts an internal span named name under ctx's span. Off, it
// returns ctx itself and the zero Span, allocating nothing.
func Start(ctx context.Context, name string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	return p.start(ctx, name, trace.SpanKindInternal, time.Time{})
}

// StartConsumer starts a consumer span (a job taken from the queue).
func StartConsumer(ctx context.Context, name string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	return p.start(ctx, name, trace.SpanKindConsumer, time.Time{})
}

// StartProducer starts a producer span (a job put on the queue).
func StartProducer(ctx context.Context, name string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	return p.start(ctx, name, trace.SpanKindProducer, time.Time{})
}

// StartAgent starts the invoke_agent span of one agent run.
func StartAgent(ctx context.Context, runID, conversationID, model string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	return p.startAgent(ctx, runID, conversationID, model, time.Time{})
}

// StartChat starts the span of one model call ("chat <model>", kind
// client). provider may be empty.
func StartChat(ctx context.Context, model, provider string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	return p.startChat(ctx, model, provider, time.Time{})
}

// StartTool starts the span of one tool call ("execute_tool <tool>").
func StartTool(ctx context.Context, tool, callID string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	return p.startTool(ctx, tool, callID, time.Time{})
}

// StartMCP starts the client span of one MCP request ("<method> <server>").
func StartMCP(ctx context.Context, server, method, tool string) (context.Context, Span) {
	p := active.Load()
	if p == nil {
		return ctx, Span{}
	}
	ctx, s := p.start(ctx, p.name(method, server), trace.SpanKindClient, time.Time{})
	if !s.records() {
		return ctx, s
	}
	b := getAttrs()
	b.add(attribute.String("mcp.method.name", clipText(method, 128)))
	b.add(attribute.String("odek.mcp.server", clipText(server, 128)))
	if tool != "" {
		b.add(attribute.String(KeyToolName, clipText(tool, 256)))
	}
	s.set(b)
	return ctx, s
}

// kindOpts are the start options of each span kind, built once: an option
// made per start boxes the kind and escapes its slice, two allocations a
// span (docs/BENCHMARKS.md, tracing on, round 3).
var kindOpts = func() (o [trace.SpanKindConsumer + 1][]trace.SpanStartOption) {
	for k := range o {
		o[k] = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKind(k))}
	}
	return o
}()

func (p *Provider) start(ctx context.Context, name string, kind trace.SpanKind, at time.Time) (context.Context, Span) {
	opts := kindOpts[trace.ValidateSpanKind(kind)]
	if !at.IsZero() { // a span rebuilt from events (EventSpans), off the loop's path
		opts = []trace.SpanStartOption{opts[0], trace.WithTimestamp(at)}
	}
	ctx, s := p.tracer.Start(ctx, clipText(name, 256), opts...)
	return ctx, Span{s: s, p: p}
}

// startAt starts a model or tool call's span: one of odek's own
// (liteSpan) when it starts now, an SDK span when it is rebuilt from
// events at their time (EventSpans, off the loop's path).
func (p *Provider) startAt(ctx context.Context, name string, kind trace.SpanKind, at time.Time) (context.Context, Span) {
	if at.IsZero() {
		return p.startLite(ctx, clipText(name, 256), kind)
	}
	return p.start(ctx, name, kind, at)
}

func (p *Provider) startAgent(ctx context.Context, runID, conv, model string, at time.Time) (context.Context, Span) {
	ctx, s := p.start(ctx, "invoke_agent odek", trace.SpanKindInternal, at)
	if !s.records() {
		return ctx, s
	}
	b := getAttrs()
	b.add(attribute.String(KeyOperation, OpInvokeAgent))
	b.add(attribute.String(KeyAgentName, "odek"))
	if runID != "" {
		b.add(attribute.String(KeyRunID, clipText(runID, 256)))
	}
	if conv != "" {
		b.add(attribute.String(KeyConversationID, clipText(conv, 256)))
	}
	if model != "" {
		b.add(attribute.String(KeyRequestModel, clipText(model, 256)))
	}
	s.set(b)
	return ctx, s
}

func (p *Provider) startChat(ctx context.Context, model, provider string, at time.Time) (context.Context, Span) {
	ctx, s := p.startAt(ctx, p.name(OpChat, model), trace.SpanKindClient, at)
	if !s.records() {
		return ctx, s
	}
	b := getAttrs()
	b.add(attribute.String(KeyOperation, OpChat))
	b.add(attribute.String(KeyRequestModel, clipText(model, 256)))
	if provider != "" {
		b.add(attribute.String(KeyProvider, clipText(provider, 128)))
	}
	s.set(b)
	return ctx, s
}

func (p *Provider) startTool(ctx context.Context, tool, callID string, at time.Time) (context.Context, Span) {
	ctx, s := p.startAt(ctx, p.name(OpExecuteTool, tool), trace.SpanKindInternal, at)
	if !s.records() {
		return ctx, s
	}
	b := getAttrs()
	b.add(attribute.String(KeyOperation, OpExecuteTool))
	b.add(attribute.String(KeyToolName, clipText(tool, 256)))
	b.add(attribute.String(KeyToolType, "function"))
	if callID != "" {
		b.add(attribute.String(KeyToolCallID, clipText(callID, 256)))
	}
	s.set(b)
	return ctx, s
}

// records reports whether a span just started records anything: odek's
// own spans always do; an SDK span that the sampler dropped does not, and
// its starter then builds no attributes for it.
func (s Span) records() bool {
	if _, ok := s.s.(*liteSpan); ok {
		return true
	}
	return s.s.IsRecording()
}

// attrs gathers a span's attributes so that the SDK gets them in one
// SetAttributes call: it then grows the span's slice once, where one call
// per attribute grows it step by step and boxes each argument slice. The
// SDK copies what it is given, so the buffer goes back to attrPool after
// the call.
type attrs struct {
	kv [16]attribute.KeyValue
	n  int
}

var attrPool = sync.Pool{New: func() any { return new(attrs) }}

func getAttrs() *attrs { return attrPool.Get().(*attrs) }

func (b *attrs) add(kv attribute.KeyValue) {
	if b.n < len(b.kv) {
		b.kv[b.n] = kv
		b.n++
	}
}

func (b *attrs) usage(input, output, cached int) {
	if input > 0 {
		b.add(attribute.Int(KeyInputTokens, input))
	}
	if output > 0 {
		b.add(attribute.Int(KeyOutputTokens, output))
	}
	if cached > 0 {
		b.add(attribute.Int(KeyCachedTokens, cached))
	}
}

// set hands b's attributes to the span in one call and recycles b.
func (s Span) set(b *attrs) {
	if b.n > 0 {
		s.s.SetAttributes(b.kv[:b.n]...)
	}
	clear(b.kv[:b.n]) // keep no string alive in the pool
	b.n = 0
	attrPool.Put(b)
}

// maxNames bounds Provider.names: span names come from configuration (a
// model, the tools, the MCP servers), a few dozen, but an unbounded cache
// keyed by them would be a leak waiting for a caller that varies them.
const maxNames = 512

type nameKey struct{ op, name string }

// name returns op+" "+name ("chat gpt-4o", "execute_tool shell"), built
// once per pair: the loop names a span per model call and per tool call,
// each a concatenation that allocates.
func (p *Provider) name(op, name string) string {
	k := nameKey{op, name}
	p.namesMu.Lock()
	n, ok := p.names[k]
	p.namesMu.Unlock()
	if ok {
		return n
	}
	n = op + " " + name
	p.namesMu.Lock()
	if len(p.names) < maxNames {
		if p.names == nil {
			p.names = map[nameKey]string{}
		}
		p.names[k] = n
	}
	p.namesMu.Unlock()
	return n
}

// finishReasons is gen_ai.response.finish_reasons for one choice; the
// attribute (a string slice, two allocations) is built once per reason.
func (p *Provider) finishReasons(r string) attribute.KeyValue {
	p.namesMu.Lock()
	kv, ok := p.reasons[r]
	p.namesMu.Unlock()
	if ok {
		return kv
	}
	kv = attribute.StringSlice("gen_ai.response.finish_reasons", []string{clipText(r, 64)})
	p.namesMu.Lock()
	if len(p.reasons) < maxNames/8 {
		if p.reasons == nil {
			p.reasons = map[string]attribute.KeyValue{}
		}
		p.reasons[r] = kv
	}
	p.namesMu.Unlock()
	return kv
}

// clipText cuts s to at most max bytes on a UTF-8 boundary.
func clipText(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

func orDefaultDur(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}
