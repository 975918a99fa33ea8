package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/telemetry"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Model and tool calls are odek's own spans (liteSpan), not the SDK's:
// they must still be spans like any other to the collector and to the
// code around them. Under a remote parent they continue its trace; an
// SDK span started under one (an MCP request) is its child; a key set
// twice is exported once with the last value; strings are clipped to the
// configured size; attributes past the span's room are counted as
// dropped; Ok status is final; the span carries the provider's resource
// and odek's scope; and nothing changes after End.
func TestLiteSpansExportLikeSDKSpans(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, func(c *telemetry.Config) { c.MaxAttrBytes = 64 }, telemetry.Options{Service: "lite"})
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)

	tctx, tool := telemetry.StartTool(ctx, "mcp_tool", "c7")
	_, mcp := telemetry.StartMCP(tctx, "srv", "tools/call", "mcp_tool") // an SDK span under the lite one
	mcp.End()
	tool.String(telemetry.KeyToolName, "renamed")      // replaces the key set at the start
	tool.String("odek.long", strings.Repeat("é", 100)) // 200 bytes, clipped to 64 on a rune boundary
	tool.Fail("tool_error", errors.New("exit status 2"))
	for i := range 40 {
		tool.Int("odek.n"+string(rune('a'+i)), int64(i)) // past the span's room
	}
	tool.End()
	tool.String("odek.after", "end") // ignored

	_, chat := telemetry.StartChat(ctx, "m", "")
	trace.SpanFromContext(telemetry.ContextWithSpan(ctx, chat)).SetStatus(codes.Ok, "")
	chat.Fail("late", nil) // Ok is final
	chat.EndChat(telemetry.ChatCall{Input: 3}, "", nil)

	spans := flush(t, r, p)
	ts, ms, cs := byName(spans, "execute_tool mcp_tool"), byName(spans, "tools/call srv"), byName(spans, "chat m")
	if ts == nil || ms == nil || cs == nil {
		t.Fatalf("spans missing: tool %v mcp %v chat %v (of %d)", ts != nil, ms != nil, cs != nil, len(spans))
	}
	if hexID(ts.GetTraceId()) != parent.TraceID().String() || hexID(ts.GetParentSpanId()) != parent.SpanID().String() {
		t.Errorf("tool span trace %s parent %s, want the remote parent's", hexID(ts.GetTraceId()), hexID(ts.GetParentSpanId()))
	}
	if ts.GetFlags() != 0x301 { // sampled, has-is-remote, is-remote (its parent is)
		t.Errorf("tool span flags %#x, want 0x301", ts.GetFlags())
	}
	if hexID(ms.GetParentSpanId()) != hexID(ts.GetSpanId()) || hexID(ms.GetTraceId()) != hexID(ts.GetTraceId()) {
		t.Errorf("MCP span's parent %s, want the tool span %s", hexID(ms.GetParentSpanId()), hexID(ts.GetSpanId()))
	}
	if ts.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL || cs.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds %v %v", ts.GetKind(), cs.GetKind())
	}
	seen := map[string]int{}
	for _, kv := range ts.GetAttributes() {
		seen[kv.GetKey()]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("key %s exported %d times", k, n)
		}
	}
	if v, _ := attr(ts, telemetry.KeyToolName); v != "renamed" {
		t.Errorf("tool name %v, want the later value", v)
	}
	if v, _ := attr(ts, "odek.long"); len(v.(string)) != 64 || !strings.HasPrefix(strings.Repeat("é", 100), v.(string)) {
		t.Errorf("long value %d bytes %q, want 64 bytes of whole runes", len(v.(string)), v)
	}
	if _, ok := attr(ts, "odek.after"); ok {
		t.Error("attribute set after End was exported")
	}
	if len(ts.GetAttributes()) != 32 || ts.GetDroppedAttributesCount() == 0 {
		t.Errorf("%d attributes, %d dropped: want the span full and the rest counted", len(ts.GetAttributes()), ts.GetDroppedAttributesCount())
	}
	if ts.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || ts.GetStatus().GetMessage() != "exit status 2" {
		t.Errorf("tool status %v", ts.GetStatus())
	}
	if v, _ := attr(ts, telemetry.KeyErrorType); v != "tool_error" {
		t.Errorf("error.type %v", v)
	}
	if cs.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_OK {
		t.Errorf("chat status %v, want Ok to stay", cs.GetStatus())
	}
	if r.Service(ts) != "lite" || r.Service(ms) != "lite" {
		t.Errorf("service %q %q", r.Service(ts), r.Service(ms))
	}
	if ts.GetStartTimeUnixNano() == 0 || ts.GetEndTimeUnixNano() < ts.GetStartTimeUnixNano() {
		t.Errorf("times %d..%d", ts.GetStartTimeUnixNano(), ts.GetEndTimeUnixNano())
	}
}

// The sampler decides for odek's own spans as for the SDK's: with
// always_off nothing is recorded or exported, and the span's context
// still carries valid, unsampled ids (a child process continues them).
func TestLiteSpansFollowTheSampler(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, func(c *telemetry.Config) { c.Sampler = "always_off" }, telemetry.Options{})
	ctx, s := telemetry.StartTool(context.Background(), "shell", "c1")
	if s.Recording() {
		t.Fatal("span records under always_off")
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || sc.IsSampled() {
		t.Fatalf("span context %v: want valid and not sampled", sc)
	}
	s.String("k", "v")
	s.End()
	if spans := flush(t, r, p); len(spans) != 0 {
		t.Fatalf("%d spans exported under always_off", len(spans))
	}
}

// A span the sampler drops gets no attributes built: a model call and a
// tool call under always_off allocate only the SDK's unsampled span and
// the context carrying it, each (a span that records nothing is never
// handed attributes, a finish reason or a first-chunk event).
func TestUnsampledSpansBuildNoAttributes(t *testing.T) {
	r := newReceiver(t)
	setup(t, r, func(c *telemetry.Config) { c.Sampler = "always_off" }, telemetry.Options{})
	ctx, run := telemetry.StartAgent(context.Background(), "r", "s", "m")
	defer run.End()
	call := telemetry.ChatCall{ResponseModel: "m", Input: 100, Output: 20, FinishReason: "stop"}
	if allocs := iterationAllocs(ctx, call); allocs > 4 {
		t.Fatalf("an unsampled chat span and tool span allocate %v times, want at most 4 (two spans, two contexts)", allocs)
	}
}

// For every sampler and parent, odek's own span records exactly when an
// SDK span started under the same parent does (the default samplers are
// decided without asking the sampler, the others by asking it).
func TestLiteSpansSampleAsTheSDK(t *testing.T) {
	parent := func(sampled bool) context.Context {
		flags := trace.TraceFlags(0)
		if sampled {
			flags = trace.FlagsSampled
		}
		return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9},
			TraceFlags: flags, Remote: true,
		}))
	}
	parents := map[string]context.Context{"root": context.Background(), "sampled parent": parent(true), "unsampled parent": parent(false)}
	for _, sampler := range []string{"", "parentbased_always_on", "always_on", "always_off", "parentbased_always_off", "traceidratio", "parentbased_traceidratio"} {
		t.Run("sampler="+sampler, func(t *testing.T) {
			r := newReceiver(t)
			setup(t, r, func(c *telemetry.Config) { c.Sampler = sampler }, telemetry.Options{})
			for name, ctx := range parents {
				_, sdk := telemetry.Start(ctx, "sdk")
				lctx, lite := telemetry.StartTool(ctx, "shell", "")
				if lite.Recording() != sdk.Recording() {
					t.Errorf("%s: odek's span records %v, the SDK's %v", name, lite.Recording(), sdk.Recording())
				}
				sc := trace.SpanContextFromContext(lctx)
				if psc := trace.SpanContextFromContext(ctx); psc.IsValid() && sc.TraceID() != psc.TraceID() {
					t.Errorf("%s: trace %s, want the parent's", name, sc.TraceID())
				}
				if !sc.IsValid() || sc.IsSampled() != lite.Recording() {
					t.Errorf("%s: span context %v with recording %v", name, sc, lite.Recording())
				}
				lite.End()
				sdk.End()
			}
		})
	}
}
