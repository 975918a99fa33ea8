package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C trace-context fields, as header/map keys and as environment
// variable names (the convention of CI systems and of other agent CLIs).
const (
	FieldTraceparent = "traceparent"
	FieldTracestate  = "tracestate"
	EnvTraceparent   = "TRACEPARENT"
	EnvTracestate    = "TRACESTATE"
)

// MaxCarrierValue bounds a carried traceparent or tracestate: W3C allows
// 55 bytes for a version-00 traceparent and asks vendors to keep
// tracestate within 512; a longer value is ignored, not parsed.
const MaxCarrierValue = 512

var w3c = propagation.TraceContext{}

// mapCarrier is a propagation.TextMapCarrier over a string map that
// ignores oversized values.
type mapCarrier map[string]string

func (m mapCarrier) Get(k string) string {
	v := m[k]
	if len(v) > MaxCarrierValue {
		return ""
	}
	return v
}

func (m mapCarrier) Set(k, v string) { m[k] = v }

func (m mapCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// ToMap returns ctx's trace context as {"traceparent": …, "tracestate": …}
// for a queue job, or nil when ctx carries none (nothing allocated).
// It carries a remote span context too, so a process that does not export
// still passes on the trace it was given.
func ToMap(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := make(mapCarrier, 2)
	w3c.Inject(ctx, m)
	if len(m) == 0 {
		return nil
	}
	return m
}

// FromMap returns ctx continuing the trace in m (a job's field); a missing,
// oversized or malformed traceparent leaves ctx as it is.
func FromMap(ctx context.Context, m map[string]string) context.Context {
	if len(m) == 0 {
		return ctx
	}
	return w3c.Extract(ctx, mapCarrier(m))
}

// Env returns the TRACEPARENT (and TRACESTATE) entries for a child
// process's environment, "KEY=value" form, or nil when ctx carries no
// trace.
func Env(ctx context.Context) []string {
	m := ToMap(ctx)
	if m == nil {
		return nil
	}
	out := make([]string, 0, 2)
	if v := m[FieldTraceparent]; v != "" {
		out = append(out, EnvTraceparent+"="+v)
	}
	if v := m[FieldTracestate]; v != "" {
		out = append(out, EnvTracestate+"="+v)
	}
	return out
}

// WithEnv appends Env(ctx) to environ after removing any TRACEPARENT and
// TRACESTATE already there, so a child sees its parent's span, not its
// grandparent's.
func WithEnv(ctx context.Context, environ []string) []string {
	out := make([]string, 0, len(environ)+2)
	for _, kv := range environ {
		if hasKey(kv, EnvTraceparent) || hasKey(kv, EnvTracestate) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, Env(ctx)...)
}

func hasKey(kv, key string) bool {
	return len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key
}

// ContextFromEnv continues the trace of a TRACEPARENT (and TRACESTATE) read
// through lookup (os.LookupEnv in a main): `odek run` and `odek subagent`
// call it so a CI pipeline's or a parent run's trace includes them.
func ContextFromEnv(ctx context.Context, lookup func(string) (string, bool)) context.Context {
	tp, ok := lookup(EnvTraceparent)
	if !ok || tp == "" {
		return ctx
	}
	m := map[string]string{FieldTraceparent: tp}
	if ts, ok := lookup(EnvTracestate); ok && ts != "" {
		m[FieldTracestate] = ts
	}
	return FromMap(ctx, m)
}

// InjectMeta adds traceparent/tracestate to an MCP request's _meta (the
// params' "_meta" object), creating it when meta is nil and ctx carries a
// trace. It returns the map to send (nil when there is nothing to send and
// meta was nil).
func InjectMeta(ctx context.Context, meta map[string]any) map[string]any {
	m := ToMap(ctx)
	if m == nil {
		return meta
	}
	if meta == nil {
		meta = make(map[string]any, len(m))
	}
	for k, v := range m {
		meta[k] = v
	}
	return meta
}

// FromMeta continues the trace carried in an MCP request's _meta (the
// server side, and the tests).
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	m := make(map[string]string, 2)
	for _, k := range []string{FieldTraceparent, FieldTracestate} {
		if s, ok := meta[k].(string); ok {
			m[k] = s
		}
	}
	return FromMap(ctx, m)
}

// InjectHTTP sets the traceparent/tracestate headers of an outgoing
// request (the Streamable HTTP MCP transport, the model endpoint).
func InjectHTTP(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		w3c.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// FromHTTP continues the trace of an incoming request's headers; values
// over MaxCarrierValue are ignored.
func FromHTTP(ctx context.Context, h http.Header) context.Context {
	m := make(map[string]string, 2)
	if v := h.Get(FieldTraceparent); v != "" {
		m[FieldTraceparent] = v
	}
	if v := h.Get(FieldTracestate); v != "" {
		m[FieldTracestate] = v
	}
	return FromMap(ctx, m)
}

// Carried reports whether ctx carries a trace to pass on (a span of ours
// or a remote one), without allocating: guard the building of a child's
// environment with it.
func Carried(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

// IDs returns ctx's trace and span ids in hex, or empty strings.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}
