package telemetrytest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// EnvCollectorBin names the OpenTelemetry Collector binary the tests run
// (built by test/otel/build-otelcol.sh: the Collector's own OTLP receiver
// and file exporter, nothing else). On PATH it is otelcol-odek.
const EnvCollectorBin = "ODEK_OTELCOL_BIN"

// Collector is one running OpenTelemetry Collector: a real OTLP peer no
// one here wrote. It receives over OTLP/HTTP and gRPC and writes every
// batch it receives, as OTLP/JSON, to a file that Spans reads back.
type Collector struct {
	// OTLPHTTP and OTLPGRPC are the receivers' base URLs
	// (OTEL_EXPORTER_OTLP_ENDPOINT of a process under test).
	OTLPHTTP, OTLPGRPC string
	out, log           string

	mu  sync.Mutex
	svc map[*tracepb.Span]string
}

// CollectorBin returns the collector binary to use, or "".
func CollectorBin() string { return peerBin(EnvCollectorBin, "otelcol-odek") }

// StartCollector starts a Collector for t, stopped by t's cleanup. Without
// a binary it skips the test, or fails it when ODEK_REQUIRE_OTEL names
// "collector" (Required).
func StartCollector(t testing.TB) *Collector {
	t.Helper()
	bin := binOrSkip(t, "collector", CollectorBin(), EnvCollectorBin, "otelcol-odek", "test/otel/build-otelcol.sh")
	return retryStart(t, func() (*Collector, error) { return startCollector(t, bin) })
}

func startCollector(t testing.TB, bin string) (*Collector, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	c := &Collector{
		OTLPGRPC: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		OTLPHTTP: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		out:      filepath.Join(dir, "traces.jsonl"),
		log:      filepath.Join(dir, "collector.log"),
		svc:      map[*tracepb.Span]string{},
	}
	cfg := fmt.Sprintf(collectorConfig, ports[0], ports[1], c.out)
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr, cmd.Dir = logf, logf, dir
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("telemetrytest: start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("telemetrytest: collector exited (%v):\n%s", err, tail(c.log))
		default:
		}
		if b, _ := os.ReadFile(c.log); bytes.Contains(b, []byte("Everything is ready")) {
			t.Cleanup(stop)
			return c, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("telemetrytest: collector not ready after 60s:\n%s", tail(c.log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log returns the end of the collector's own log.
func (c *Collector) Log() string { return tail(c.log) }

// Spans returns every span the collector has written so far.
func (c *Collector) Spans() ([]*tracepb.Span, error) {
	f, err := os.Open(c.out)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.svc)
	var out []*tracepb.Span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var td jsonTraces
		if err := json.Unmarshal(sc.Bytes(), &td); err != nil {
			return nil, fmt.Errorf("telemetrytest: collector output: %w", err)
		}
		for _, rs := range td.ResourceSpans {
			svc := ""
			for _, a := range rs.Resource.Attributes {
				if kv, err := a.decode(); err == nil && kv.GetKey() == "service.name" {
					svc = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, js := range ss.Spans {
					s, err := js.decode()
					if err != nil {
						return nil, err
					}
					c.svc[s] = svc
					out = append(out, s)
				}
			}
		}
	}
	return out, sc.Err()
}

// Service returns the service.name of a span Spans returned last.
func (c *Collector) Service(s *tracepb.Span) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.svc[s]
}

// WaitSpans polls until done(spans) holds or timeout passes, and returns
// the spans then (failing t on timeout).
func (c *Collector) WaitSpans(t testing.TB, timeout time.Duration, done func([]*tracepb.Span) bool) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans, err := c.Spans()
		if err == nil && done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector: condition not met after %s with %d spans (last error %v); collector log:\n%s", timeout, len(spans), err, c.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// OTLP/JSON (what the file exporter writes) differs from protojson in its
// ids, which are hex, not base64; these types read it and convert.
type jsonTraces struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []jsonKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []jsonSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type jsonKV json.RawMessage

func (j jsonKV) decode() (*commonpb.KeyValue, error) {
	var kv commonpb.KeyValue
	err := protojson.Unmarshal(j, &kv)
	return &kv, err
}

func (j *jsonKV) UnmarshalJSON(b []byte) error {
	*j = append((*j)[:0], b...)
	return nil
}

type jsonSpan struct {
	TraceID      string          `json:"traceId"`
	SpanID       string          `json:"spanId"`
	ParentSpanID string          `json:"parentSpanId"`
	Name         string          `json:"name"`
	Kind         int32           `json:"kind"`
	Start        string          `json:"startTimeUnixNano"`
	End          string          `json:"endTimeUnixNano"`
	Attributes   []jsonKV        `json:"attributes"`
	Status       json.RawMessage `json:"status"`
	Events       []struct {
		Name string `json:"name"`
		Time string `json:"timeUnixNano"`
	} `json:"events"`
	Links []struct {
		TraceID string `json:"traceId"`
		SpanID  string `json:"spanId"`
	} `json:"links"`
}

func (j jsonSpan) decode() (*tracepb.Span, error) {
	var err error
	s := &tracepb.Span{Name: j.Name, Kind: tracepb.Span_SpanKind(j.Kind)}
	id := func(h string) []byte {
		if h == "" || err != nil {
			return nil
		}
		var b []byte
		b, err = hex.DecodeString(h)
		return b
	}
	num := func(v string) uint64 {
		n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return n
	}
	s.TraceId, s.SpanId, s.ParentSpanId = id(j.TraceID), id(j.SpanID), id(j.ParentSpanID)
	s.StartTimeUnixNano, s.EndTimeUnixNano = num(j.Start), num(j.End)
	for _, a := range j.Attributes {
		kv, derr := a.decode()
		if derr != nil {
			return nil, fmt.Errorf("telemetrytest: attribute of %s: %w", j.Name, derr)
		}
		s.Attributes = append(s.Attributes, kv)
	}
	if len(j.Status) > 0 {
		s.Status = &tracepb.Status{}
		if derr := protojson.Unmarshal(j.Status, s.Status); derr != nil {
			return nil, derr
		}
	}
	for _, e := range j.Events {
		s.Events = append(s.Events, &tracepb.Span_Event{Name: e.Name, TimeUnixNano: num(e.Time)})
	}
	for _, l := range j.Links {
		s.Links = append(s.Links, &tracepb.Span_Link{TraceId: id(l.TraceID), SpanId: id(l.SpanID)})
	}
	if err != nil {
		return nil, fmt.Errorf("telemetrytest: ids of %s: %w", j.Name, err)
	}
	return s, nil
}

// collectorConfig: the OTLP receiver on two loopback ports and the file
// exporter, no processor, the collector's own metrics off (ports: otlp
// grpc, otlp http; the output file).
const collectorConfig = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d
exporters:
  file:
    path: %s
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
  telemetry:
    metrics:
      level: none
`
