package telemetry_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestWireEncoding holds the hand-written OTLP encoder to the generated
// protobuf types: every kind of attribute value, events, links, status,
// kind and a remote parent come out as the collector decodes them.
func TestWireEncoding(t *testing.T) {
	r := newReceiver(t)
	p := setup(t, r, nil, telemetry.Options{Service: "wire", Version: "v9"})
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	link := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, SpanID: trace.SpanID{7, 7, 7, 7, 7, 7, 7, 7},
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	_, span := otelTracer().Start(ctx, "wire.span", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: link, Attributes: []attribute.KeyValue{attribute.String("why", "follows")}}))
	span.SetAttributes(
		attribute.String("s", "text"), attribute.Bool("b", true), attribute.Int64("i", -42),
		attribute.Float64("f", 2.5), attribute.StringSlice("ss", []string{"a", "b"}),
		attribute.Int64Slice("is", []int64{1, -2}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Float64Slice("fs", []float64{0.5}),
	)
	span.AddEvent("ev", trace.WithAttributes(attribute.Int("n", 3)))
	span.SetStatus(codes.Error, "broke")
	span.End()

	spans := flush(t, r, p)
	s := byName(spans, "wire.span")
	if s == nil {
		t.Fatalf("span not received; got %d spans", len(spans))
	}
	if r.Service(s) != "wire" {
		t.Errorf("service.name = %q, want wire", r.Service(s))
	}
	if hexID(s.GetTraceId()) != parent.TraceID().String() || hexID(s.GetParentSpanId()) != parent.SpanID().String() {
		t.Errorf("trace %s parent %s, want %s %s", hexID(s.GetTraceId()), hexID(s.GetParentSpanId()), parent.TraceID(), parent.SpanID())
	}
	if len(s.GetSpanId()) != 8 || s.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("span id %x kind %v", s.GetSpanId(), s.GetKind())
	}
	if s.GetFlags() != 0x301 { // sampled, has-is-remote, is-remote
		t.Errorf("flags = %#x, want 0x301", s.GetFlags())
	}
	if s.GetStartTimeUnixNano() == 0 || s.GetEndTimeUnixNano() < s.GetStartTimeUnixNano() {
		t.Errorf("times %d..%d", s.GetStartTimeUnixNano(), s.GetEndTimeUnixNano())
	}
	if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.GetStatus().GetMessage() != "broke" {
		t.Errorf("status = %v", s.GetStatus())
	}
	want := map[string]any{"s": "text", "b": true, "i": int64(-42), "f": 2.5}
	for k, v := range want {
		if got, ok := attr(s, k); !ok || got != v {
			t.Errorf("attribute %s = %v (%v), want %v", k, got, ok, v)
		}
	}
	arrays := map[string]int{"ss": 2, "is": 2, "bs": 2, "fs": 1}
	for _, kv := range s.GetAttributes() {
		if n, ok := arrays[kv.GetKey()]; ok {
			vals := kv.GetValue().GetArrayValue().GetValues()
			if len(vals) != n {
				t.Errorf("array %s has %d values, want %d", kv.GetKey(), len(vals), n)
			}
			delete(arrays, kv.GetKey())
			if kv.GetKey() == "is" && (len(vals) != 2 || vals[1].GetIntValue() != -2) {
				t.Errorf("is = %v", vals)
			}
		}
	}
	if len(arrays) != 0 {
		t.Errorf("arrays missing: %v", arrays)
	}
	if ev := s.GetEvents(); len(ev) != 1 || ev[0].GetName() != "ev" || ev[0].GetAttributes()[0].GetValue().GetIntValue() != 3 || ev[0].GetTimeUnixNano() == 0 {
		t.Errorf("events = %v", ev)
	}
	if l := s.GetLinks(); len(l) != 1 || hexID(l[0].GetSpanId()) != link.SpanID().String() || l[0].GetAttributes()[0].GetValue().GetStringValue() != "follows" {
		t.Errorf("links = %v", l)
	}
}

// grpcCollector is a real grpc-go OTLP trace service on loopback.
type grpcCollector struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
	auth  []string
	calls atomic.Int32
	fail  func(call int32) error // the status of a call, nil for OK
}

func (c *grpcCollector) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	n := c.calls.Add(1)
	if c.fail != nil {
		if err := c.fail(n); err != nil {
			return nil, err
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auth = append(c.auth, md.Get("authorization")...)
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func startGRPC(t *testing.T, c *grpcCollector) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

func grpcProvider(t *testing.T, endpoint string) *telemetry.Provider {
	t.Helper()
	p, err := telemetry.Setup(context.Background(), telemetry.Config{
		Enabled: true, Protocol: telemetry.ProtocolGRPC, Endpoint: endpoint,
		Headers: map[string]string{"Authorization": "Bearer k"}, ScheduleWait: 10 * time.Millisecond, Timeout: 5 * time.Second,
	}, telemetry.Options{Service: "g"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

// TestGRPCExport sends spans over OTLP/gRPC (cleartext HTTP/2) to a real
// grpc-go server: the spans and the configured headers arrive.
func TestGRPCExport(t *testing.T) {
	c := &grpcCollector{}
	p := grpcProvider(t, startGRPC(t, c))
	_, s := otelTracer().Start(context.Background(), "over.grpc")
	s.SetAttributes(attribute.String("k", "v"))
	s.End()
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.spans) != 1 || c.spans[0].GetName() != "over.grpc" || c.spans[0].GetAttributes()[0].GetValue().GetStringValue() != "v" {
		t.Fatalf("received %v", c.spans)
	}
	if len(c.auth) != 1 || c.auth[0] != "Bearer k" {
		t.Errorf("authorization metadata = %v", c.auth)
	}
	if st := p.Stats(); st.Failed != 0 || st.Exported != 1 {
		t.Errorf("stats = %+v", st)
	}
}

// TestGRPCStatus: UNAVAILABLE is retried until the collector accepts;
// INVALID_ARGUMENT fails the export at once.
func TestGRPCStatus(t *testing.T) {
	t.Run("unavailable is retried", func(t *testing.T) {
		c := &grpcCollector{fail: func(n int32) error {
			if n < 3 {
				return status.Error(grpccodes.Unavailable, "warming up")
			}
			return nil
		}}
		p := grpcProvider(t, startGRPC(t, c))
		_, s := otelTracer().Start(context.Background(), "retried")
		s.End()
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := c.calls.Load(); n != 3 {
			t.Errorf("calls = %d, want 3", n)
		}
		if st := p.Stats(); st.Exported != 1 || st.Failed != 0 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("invalid argument is not", func(t *testing.T) {
		c := &grpcCollector{fail: func(int32) error { return status.Error(grpccodes.InvalidArgument, "bad spans") }}
		p := grpcProvider(t, startGRPC(t, c))
		_, s := otelTracer().Start(context.Background(), "rejected")
		s.End()
		_ = p.ForceFlush(context.Background())
		if n := c.calls.Load(); n != 1 {
			t.Errorf("calls = %d, want 1", n)
		}
		if st := p.Stats(); st.Failed != 1 {
			t.Errorf("stats = %+v, want one failed", st)
		}
	})
}

// TestHTTPStatus: 503 is retried, 400 is not.
func TestHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      int
		wantCalls int32
		wantOK    bool
	}{
		{"503 retried", http.StatusServiceUnavailable, 2, true},
		{"400 not retried", http.StatusBadRequest, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if calls.Add(1) == 1 {
					http.Error(w, "nope", tc.code)
					return
				}
				if req.Header.Get("Content-Type") != "application/x-protobuf" {
					http.Error(w, "content type", http.StatusUnsupportedMediaType)
					return
				}
				w.WriteHeader(http.StatusOK)
			}))
			t.Cleanup(srv.Close)
			p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: srv.URL + "/v1/traces",
				ScheduleWait: 10 * time.Millisecond, Timeout: 5 * time.Second}, telemetry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
			_, s := otelTracer().Start(context.Background(), "x")
			s.End()
			_ = p.ForceFlush(context.Background())
			if n := calls.Load(); n != tc.wantCalls {
				t.Errorf("calls = %d, want %d", n, tc.wantCalls)
			}
			if st := p.Stats(); (st.Exported == 1) != tc.wantOK {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

// otelTracer is a tracer of the provider Setup installed globally.
func otelTracer() trace.Tracer { return otel.Tracer("otlp_test") }

func TestBadEndpoint(t *testing.T) {
	_, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: "ftp://x"}, telemetry.Options{})
	if !errors.Is(err, telemetry.ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
}

// A collector that refuses the connection fails the export at once rather
// than being retried until the export timeout: `odek run` must not wait
// for it at exit (docs/OBSERVABILITY.md).
func TestRefusedConnectionIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, proto := range []string{telemetry.ProtocolHTTP, telemetry.ProtocolGRPC} {
		t.Run(proto, func(t *testing.T) {
			p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Protocol: proto,
				Endpoint: "http://" + addr + "/v1/traces", ScheduleWait: time.Millisecond, Timeout: time.Hour}, telemetry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = p.Shutdown(ctx)
			})
			_, s := otelTracer().Start(context.Background(), "lost")
			s.End()
			// With retries the export would last the hour-long timeout and
			// this flush would end by its context with nothing counted.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = p.ForceFlush(ctx)
			if st := p.Stats(); st.Failed != 1 {
				t.Fatalf("stats = %+v, want the span counted as failed", st)
			}
		})
	}
}
