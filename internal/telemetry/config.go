package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Protocols of the OTLP exporter (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Limits on the configuration, each named in the error that reports it.
const (
	// MaxHeaderBytes bounds OTEL_EXPORTER_OTLP_HEADERS (and the traces
	// variant) as written.
	MaxHeaderBytes = 8 << 10
	// MaxResourceAttrs bounds the entries of OTEL_RESOURCE_ATTRIBUTES.
	MaxResourceAttrs = 64
	// MaxQueueSize bounds OTEL_BSP_MAX_QUEUE_SIZE.
	MaxQueueSize = 1 << 20
	// MaxAttrLimit bounds OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT.
	MaxAttrLimit = 1 << 20
)

// Defaults of the fields of Config that zero leaves to the package.
const (
	DefaultQueueSize    = 2048
	DefaultBatchSize    = 512
	DefaultScheduleWait = time.Second
	DefaultTimeout      = 10 * time.Second
	DefaultMaxAttrBytes = 4096
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("telemetry: bad configuration")

// Config says where spans go. The zero Config is off: no provider, no
// exporter, nothing allocated on the hot path.
type Config struct {
	// Enabled turns the exporter on. FromEnv sets it when an OTLP endpoint
	// is configured (or OTEL_TRACES_EXPORTER=otlp), unless
	// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
	Enabled bool
	// Endpoint is the full URL spans are sent to: for http/protobuf the
	// path included (http://collector:4318/v1/traces), for grpc the
	// scheme picks TLS (http:// is plaintext).
	Endpoint string
	// Protocol is ProtocolHTTP (zero means it) or ProtocolGRPC.
	Protocol string
	// Headers are sent with every export (an API key for a hosted
	// collector). Never logged.
	Headers map[string]string
	// Timeout bounds one export call; 0 means DefaultTimeout.
	Timeout time.Duration
	// ServiceName is service.name; empty means the name the main gives
	// Setup ("odek", "odek-worker", "odek-bot").
	ServiceName string
	// Resource holds further resource attributes, in order.
	Resource []KeyValue
	// Sampler is one of the OTEL_TRACES_SAMPLER names; empty means
	// parentbased_always_on. SamplerArg is the ratio of the
	// traceidratio samplers (0..1; 0 when not given means 1).
	Sampler    string
	SamplerArg float64
	// QueueSize is how many finished spans wait for export at most; a
	// span that finds the queue full is dropped and counted. 0 means
	// DefaultQueueSize. BatchSize is the most spans one export carries
	// (0: DefaultBatchSize); ScheduleWait is how long a partial batch waits
	// (0: DefaultScheduleWait).
	QueueSize    int
	BatchSize    int
	ScheduleWait time.Duration
	// MaxAttrBytes bounds every string attribute (longer ones are cut on a
	// UTF-8 boundary); 0 means DefaultMaxAttrBytes.
	MaxAttrBytes int
	// CaptureContent records prompts, completions, tool arguments and
	// results on spans (redacted, clipped). Off by default.
	CaptureContent bool
}

// KeyValue is one resource attribute as configured.
type KeyValue struct{ Key, Value string }

// EnvVars documents the variables FromEnv reads, for `odek config env`
// (the cleanenv tags render the table; FromEnv does the reading).
type EnvVars struct {
	Endpoint       string `env:"OTEL_EXPORTER_OTLP_ENDPOINT" env-description:"OTLP collector base URL (http://host:4318; /v1/traces is added for http/protobuf); setting it turns tracing on"`
	TracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" env-description:"full URL for traces only; wins over OTEL_EXPORTER_OTLP_ENDPOINT"`
	Protocol       string `env:"OTEL_EXPORTER_OTLP_PROTOCOL" env-description:"http/protobuf (default) or grpc; OTEL_EXPORTER_OTLP_TRACES_PROTOCOL wins"`
	Headers        string `env:"OTEL_EXPORTER_OTLP_HEADERS" env-description:"key=value,... sent with every export (percent-encoded values); OTEL_EXPORTER_OTLP_TRACES_HEADERS wins"`
	Timeout        string `env:"OTEL_EXPORTER_OTLP_TIMEOUT" env-description:"one export's timeout in milliseconds (default 10000); OTEL_EXPORTER_OTLP_TRACES_TIMEOUT wins"`
	ServiceName    string `env:"OTEL_SERVICE_NAME" env-description:"service.name of the spans (default odek, odek-worker or odek-bot)"`
	Resource       string `env:"OTEL_RESOURCE_ATTRIBUTES" env-description:"key=value,... resource attributes (deployment.environment=prod)"`
	Sampler        string `env:"OTEL_TRACES_SAMPLER" env-description:"always_on, always_off, traceidratio, parentbased_always_on (default), parentbased_always_off, parentbased_traceidratio"`
	SamplerArg     string `env:"OTEL_TRACES_SAMPLER_ARG" env-description:"the ratio of the traceidratio samplers, 0..1"`
	Exporter       string `env:"OTEL_TRACES_EXPORTER" env-description:"otlp (on, default endpoint when none is set) or none (off)"`
	Disabled       string `env:"OTEL_SDK_DISABLED" env-description:"true turns tracing off whatever else is set"`
	QueueSize      string `env:"OTEL_BSP_MAX_QUEUE_SIZE" env-description:"finished spans waiting for export at most (default 2048); more are dropped and counted"`
	BatchSize      string `env:"OTEL_BSP_MAX_EXPORT_BATCH_SIZE" env-description:"spans per export at most (default 512)"`
	ScheduleDelay  string `env:"OTEL_BSP_SCHEDULE_DELAY" env-description:"milliseconds a partial batch waits (default 1000)"`
	AttrLimit      string `env:"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" env-description:"bytes per string attribute at most (default 4096)"`
	Capture        string `env:"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" env-description:"true records prompts, completions and tool arguments on spans, redacted (default false)"`
	TraceParent    string `env:"TRACEPARENT" env-description:"W3C traceparent: odek run and odek subagent continue this trace; children get their own"`
	TraceState     string `env:"TRACESTATE" env-description:"W3C tracestate that goes with TRACEPARENT"`
}

// FromEnv reads the OTEL_* variables through lookup (os.LookupEnv in a
// main). An error names the variable and the limit or the accepted values.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	first := func(ks ...string) (string, string) {
		for _, k := range ks {
			if v := get(k); v != "" {
				return k, v
			}
		}
		return ks[len(ks)-1], ""
	}
	var c Config
	if d := get("OTEL_SDK_DISABLED"); strings.EqualFold(d, "true") {
		return Config{}, nil
	}
	exporter := strings.ToLower(get("OTEL_TRACES_EXPORTER"))
	switch exporter {
	case "", "otlp":
	case "none":
		return Config{}, nil
	default:
		return Config{}, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: want otlp or none", ErrConfig, exporter)
	}

	pk, proto := first("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	switch proto {
	case "", ProtocolHTTP:
		c.Protocol = ProtocolHTTP
	case ProtocolGRPC:
		c.Protocol = ProtocolGRPC
	default:
		return Config{}, fmt.Errorf("%w: %s=%q: want %s or %s", ErrConfig, pk, proto, ProtocolHTTP, ProtocolGRPC)
	}

	if v := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		if err := checkURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v); err != nil {
			return Config{}, err
		}
		c.Endpoint = v
	} else if v := get("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		if err := checkURL("OTEL_EXPORTER_OTLP_ENDPOINT", v); err != nil {
			return Config{}, err
		}
		c.Endpoint = v
		if c.Protocol == ProtocolHTTP {
			c.Endpoint = strings.TrimRight(v, "/") + "/v1/traces"
		}
	} else if exporter == "otlp" {
		c.Endpoint = "http://localhost:4318/v1/traces"
		if c.Protocol == ProtocolGRPC {
			c.Endpoint = "http://localhost:4317"
		}
	}
	c.Enabled = c.Endpoint != ""

	hk, hv := first("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
	h, err := ParseHeaders(hv)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", hk, err)
	}
	c.Headers = h

	tk, tv := first("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
	ms, err := intVar(tk, tv, 0, 10*60*1000)
	if err != nil {
		return Config{}, err
	}
	c.Timeout = time.Duration(ms) * time.Millisecond

	c.ServiceName = get("OTEL_SERVICE_NAME")
	if c.Resource, err = ParseResource(get("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return Config{}, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if c.ServiceName == "" {
		for _, kv := range c.Resource {
			if kv.Key == "service.name" {
				c.ServiceName = kv.Value
			}
		}
	}

	c.Sampler = strings.ToLower(get("OTEL_TRACES_SAMPLER"))
	switch c.Sampler {
	case "", "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio":
	default:
		return Config{}, fmt.Errorf("%w: OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", ErrConfig, c.Sampler)
	}
	if v := get("OTEL_TRACES_SAMPLER_ARG"); v != "" && strings.HasSuffix(c.Sampler, "traceidratio") {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return Config{}, fmt.Errorf("%w: OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", ErrConfig, v)
		}
		c.SamplerArg = f
	}

	if c.QueueSize, err = intVar("OTEL_BSP_MAX_QUEUE_SIZE", get("OTEL_BSP_MAX_QUEUE_SIZE"), 1, MaxQueueSize); err != nil {
		return Config{}, err
	}
	if c.BatchSize, err = intVar("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), 1, MaxQueueSize); err != nil {
		return Config{}, err
	}
	d, err := intVar("OTEL_BSP_SCHEDULE_DELAY", get("OTEL_BSP_SCHEDULE_DELAY"), 1, 60*60*1000)
	if err != nil {
		return Config{}, err
	}
	c.ScheduleWait = time.Duration(d) * time.Millisecond
	if c.MaxAttrBytes, err = intVar("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", get("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"), 16, MaxAttrLimit); err != nil {
		return Config{}, err
	}
	switch v := strings.ToLower(get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")); v {
	case "", "false":
	case "true":
		c.CaptureContent = true
	default:
		return Config{}, fmt.Errorf("%w: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=%q: want true or false", ErrConfig, v)
	}
	return c, nil
}

func checkURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %s=%q: want an http:// or https:// URL with a host", ErrConfig, name, v)
	}
	return nil
}

// intVar parses an optional integer variable within [lo, hi]; "" is 0.
func intVar(name, v string, lo, hi int) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s=%q: want an integer from %d to %d", ErrConfig, name, v, lo, hi)
	}
	return n, nil
}

// ParseHeaders parses the W3C-baggage-like list of OTEL_EXPORTER_OTLP_HEADERS:
// key=value pairs separated by commas, values percent-encoded. The text is
// at most MaxHeaderBytes; keys must be HTTP token characters.
func ParseHeaders(s string) (map[string]string, error) {
	kvs, err := parsePairs(s, MaxHeaderBytes, 256)
	if err != nil || len(kvs) == 0 {
		return nil, err
	}
	h := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if !isToken(kv.Key) {
			return nil, fmt.Errorf("%w: header name %q: want HTTP token characters", ErrConfig, kv.Key)
		}
		if strings.ContainsAny(kv.Value, "\r\n\x00") {
			return nil, fmt.Errorf("%w: header %q: value has a control character", ErrConfig, kv.Key)
		}
		h[kv.Key] = kv.Value
	}
	return h, nil
}

// ParseResource parses OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated
// by commas, values percent-encoded, at most MaxResourceAttrs entries.
func ParseResource(s string) ([]KeyValue, error) {
	return parsePairs(s, MaxHeaderBytes, MaxResourceAttrs)
}

func parsePairs(s string, maxBytes, maxPairs int) ([]KeyValue, error) {
	if len(s) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrConfig, len(s), maxBytes)
	}
	var out []KeyValue
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %q is not key=value", ErrConfig, clipText(part, 64))
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%w: value of %q: %v", ErrConfig, clipText(k, 64), err)
		}
		if len(out) == maxPairs {
			return nil, fmt.Errorf("%w: more than %d entries", ErrConfig, maxPairs)
		}
		out = append(out, KeyValue{Key: k, Value: dv})
	}
	return out, nil
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}
