package telemetry

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of odek's spans.
const ScopeName = "github.com/odekrun/odek"

// Redactor masks secrets in captured content; *redact.Redactor is one.
type Redactor interface {
	String(s string) string
}

// Options are what a main adds to the Config.
type Options struct {
	// Service is service.name when Config.ServiceName is empty.
	Service string
	// Version is service.version; empty leaves it out.
	Version string
	// Redactor masks captured content; nil with CaptureContent set means
	// content is not captured (fail closed).
	Redactor Redactor
}

// Provider is the active tracing setup. Create it with Setup; the zero
// value is not usable.
type Provider struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	q       *queue
	sampler sdktrace.Sampler // the tracer provider's, for liteSpans
	// sampling says what sampler decides without asking it (liteSpan):
	// samplingParent for parentbased_always_on, samplingAlways for
	// always_on, samplingAsk for the others.
	sampling int8
	res      *resource.Resource // the tracer provider's resource, for liteSpans
	maxAttr  int
	capture  bool
	red      Redactor

	namesMu sync.Mutex
	names   map[nameKey]string            // span names (name), bounded
	reasons map[string]attribute.KeyValue // finish reasons (finishReasons), bounded
}

const (
	samplingAsk int8 = iota
	samplingParent
	samplingAlways
)

// active is the provider the helpers use; nil means off.
var active atomic.Pointer[Provider]

// On reports whether spans are being recorded and exported.
func On() bool { return active.Load() != nil }

// Setup installs a provider for cfg and returns it; with cfg.Enabled
// false it installs nothing and returns (nil, nil): the helpers stay
// no-ops. It also sets the OpenTelemetry globals (tracer provider, the W3C
// propagator), so a library instrumented with the otel API joins the
// trace. Setup does not contact the collector: a dead one shows only as
// Stats.Failed.
func Setup(ctx context.Context, cfg Config, opts Options) (*Provider, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	exp, err := newExporter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	name := cfg.ServiceName
	if name == "" {
		name = opts.Service
	}
	if name == "" {
		name = "odek"
	}
	attrs := make([]attribute.KeyValue, 0, len(cfg.Resource)+2)
	for _, kv := range cfg.Resource {
		if kv.Key != "service.name" {
			attrs = append(attrs, attribute.String(kv.Key, kv.Value))
		}
	}
	attrs = append(attrs, attribute.String("service.name", name))
	if opts.Version != "" {
		attrs = append(attrs, attribute.String("service.version", opts.Version))
	}
	res, err := resource.Merge(sdkResource(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	p := &Provider{
		maxAttr: orDefault(cfg.MaxAttrBytes, DefaultMaxAttrBytes),
		capture: cfg.CaptureContent && opts.Redactor != nil,
		red:     opts.Redactor,
	}
	// The SDK merges the environment's resource (OTEL_RESOURCE_ATTRIBUTES)
	// into the one it is given; odek's own spans (liteSpan) carry the same.
	if env, err := resource.Merge(resource.Environment(), res); err == nil {
		res = env
	}
	p.res, p.sampler = res, sampler(cfg.Sampler, cfg.SamplerArg)
	switch cfg.Sampler {
	case "always_on":
		p.sampling = samplingAlways
	case "always_off", "traceidratio", "parentbased_always_off", "parentbased_traceidratio":
	default: // sampler's default, parentbased_always_on
		p.sampling = samplingParent
	}
	p.q = newQueue(exp, res, orDefault(cfg.QueueSize, DefaultQueueSize), orDefault(cfg.BatchSize, DefaultBatchSize),
		orDefaultDur(cfg.ScheduleWait, DefaultScheduleWait), orDefaultDur(cfg.Timeout, DefaultTimeout))
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = p.maxAttr
	p.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(p.sampler),
		sdktrace.WithSpanProcessor(p.q),
		sdktrace.WithRawSpanLimits(limits),
	)
	p.tracer = p.tp.Tracer(ScopeName)
	otel.SetTracerProvider(p.tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	active.Store(p)
	return p, nil
}

// sdkResource is resource.Default() without its detectors' work: the
// telemetry.sdk.* attributes under the SDK's schema. Default also names
// the service after the executable (a readlink of /proc/self/exe, ~40 µs
// of a traced `odek run`'s start, docs/BENCHMARKS.md) and reads
// OTEL_RESOURCE_ATTRIBUTES, but Setup always sets service.name and merges
// the environment's resource itself. TestResourceMatchesSDKDefault holds
// it to Default.
func sdkResource() *resource.Resource {
	return resource.NewWithAttributes(semconv.SchemaURL, semconv.TelemetrySDKName("opentelemetry"),
		semconv.TelemetrySDKLanguageGo, semconv.TelemetrySDKVersion(sdk.Version()))
}

func newExporter(_ context.Context, cfg Config) (*exporter, error) {
	switch cfg.Protocol {
	case "", ProtocolHTTP, ProtocolGRPC:
		return newOTLPExporter(cfg, orDefaultDur(cfg.Timeout, DefaultTimeout))
	}
	return nil, fmt.Errorf("%w: protocol %q: want %s or %s", ErrConfig, cfg.Protocol, ProtocolHTTP, ProtocolGRPC)
}

func sampler(name string, arg float64) sdktrace.Sampler {
	ratio := arg
	if ratio == 0 {
		ratio = 1
	}
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// Shutdown exports what is queued until ctx ends and turns tracing off.
// A nil Provider is a no-op, so a main can defer it unconditionally.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	active.CompareAndSwap(p, nil)
	return p.tp.Shutdown(ctx)
}

// ForceFlush exports what is queued now (tests, a CLI before it exits).
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// Stats reports the export queue's counters; zero for a nil Provider.
func (p *Provider) Stats() Stats {
	if p == nil {
		return Stats{}
	}
	return p.q.stats()
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}
