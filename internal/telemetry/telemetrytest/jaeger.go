// Package telemetrytest runs a real trace receiver for tests: Jaeger's
// all-in-one program (built from its Go module by test/otel/build-jaeger.sh,
// not by the tests), with in-memory storage, its OTLP receivers and its
// query API on ephemeral loopback ports.
//
// StartJaeger finds the binary through ODEK_JAEGER_BIN or PATH and skips
// the test when there is none, unless ODEK_REQUIRE_OTEL names it (see
// Required), when it fails instead. Each call starts its own process, stopped by the
// test's cleanup; a Jaeger is safe for concurrent use.
package telemetrytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Required reports whether a missing receiver of kind ("jaeger",
// "collector") fails the test instead of skipping it: ODEK_REQUIRE_OTEL is
// a comma-separated list of the kinds CI provides, or 1 for both.
func Required(kind string) bool {
	v := os.Getenv(EnvRequireOTel)
	if v == "1" {
		return true
	}
	for k := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(k) == kind {
			return true
		}
	}
	return false
}

// Env names.
const (
	EnvJaegerBin   = "ODEK_JAEGER_BIN"
	EnvRequireOTel = "ODEK_REQUIRE_OTEL"
)

// Jaeger is one running all-in-one Jaeger.
type Jaeger struct {
	// OTLPHTTP is the OTLP/HTTP receiver's base URL (http://127.0.0.1:p):
	// the value of OTEL_EXPORTER_OTLP_ENDPOINT for a process under test.
	OTLPHTTP string
	// OTLPGRPC is the OTLP/gRPC receiver (http://127.0.0.1:p).
	OTLPGRPC string
	// Query is the query API's base URL.
	Query string
	log   string
}

// Bin returns the jaeger binary to use, or "" when there is none.
func Bin() string { return peerBin(EnvJaegerBin, "jaeger") }

// StartJaeger starts Jaeger for t and waits until its query API answers.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := binOrSkip(t, "jaeger", Bin(), EnvJaegerBin, "jaeger", "test/otel/build-jaeger.sh")
	return retryStart(t, func() (*Jaeger, error) { return start(t, bin) })
}

func start(t testing.TB, bin string) (*Jaeger, error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(configTemplate, ports[0], ports[1], ports[2], ports[3], ports[4])
	cfgPath := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "jaeger.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
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
	j := &Jaeger{
		OTLPGRPC: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		OTLPHTTP: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		Query:    fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
		log:      logPath,
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("telemetrytest: jaeger exited (%v):\n%s", err, tail(logPath))
		default:
		}
		if j.ready() {
			t.Cleanup(stop)
			return j, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("telemetrytest: jaeger not ready after 60s:\n%s", tail(logPath))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready: the query API answers and the OTLP/HTTP receiver accepts.
func (j *Jaeger) ready() bool {
	resp, err := http.Get(j.Query + "/api/services")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(j.OTLPHTTP, "http://"))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Log returns the end of Jaeger's own log, for a failure message.
func (j *Jaeger) Log() string { return tail(j.log) }

// Span is one span as the query API reports it.
type Span struct {
	TraceID   string `json:"traceID"`
	SpanID    string `json:"spanID"`
	Operation string `json:"operationName"`
	// References hold the parent (CHILD_OF) and links.
	References []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	// Service is filled from the trace's processes.
	Service string `json:"-"`
}

// Parent is the span id of the CHILD_OF reference, or "".
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag returns a tag's value (strings as strings, numbers as float64 or
// int64 as JSON decodes them).
func (s Span) Tag(key string) (any, bool) {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value, true
		}
	}
	return nil, false
}

// ErrNotFound: Jaeger has no trace of that id (yet).
var ErrNotFound = errors.New("telemetrytest: trace not found")

// Trace fetches the spans of one trace id (32 hex digits).
func (j *Jaeger) Trace(ctx context.Context, traceID string) ([]Span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.Query+"/api/traces/"+traceID, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, ErrNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("telemetrytest: GET /api/traces/%s: %s", traceID, resp.Status)
	}
	var body struct {
		Data []struct {
			Spans     []Span `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("telemetrytest: decode trace: %w", err)
	}
	var out []Span
	for _, d := range body.Data {
		for _, s := range d.Spans {
			s.Service = d.Processes[s.ProcessID].ServiceName
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return out, nil
}

// WaitTrace polls until the trace has at least n spans or the deadline
// passes (ingestion is asynchronous), and returns what it has then.
func (j *Jaeger) WaitTrace(t testing.TB, traceID string, n int, timeout time.Duration) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var spans []Span
	var err error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		spans, err = j.Trace(ctx, traceID)
		cancel()
		if err == nil && len(spans) >= n {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans, want %d (last error %v); jaeger log:\n%s", traceID, len(spans), n, err, j.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// configTemplate: all-in-one with memory storage, OTLP receivers, the
// query API, no other listener (ports: otlp grpc, otlp http, query http,
// query grpc, the collector's own metrics).
const configTemplate = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%[3]d
    grpc:
      endpoint: 127.0.0.1:%[4]d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[1]d
      http:
        endpoint: 127.0.0.1:%[2]d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
# unused metrics port reserved: %[5]d
`
