package telemetrytest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is a loopback OTLP/HTTP endpoint for unit tests that need no
// Jaeger: it decodes what the real exporter sends (protobuf over HTTP, as
// a collector receives it) and keeps the spans.
type Receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	svc   map[*tracepb.Span]string
	reqs  []int // spans per request, in arrival order
}

// NewReceiver starts a Receiver, closed by t's cleanup.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{svc: map[*tracepb.Span]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var msg coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		n := len(r.spans)
		for _, rs := range msg.GetResourceSpans() {
			svc := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					svc = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans = append(r.spans, s)
					r.svc[s] = svc
				}
			}
		}
		r.reqs = append(r.reqs, len(r.spans)-n)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// Endpoint is the full traces URL (Config.Endpoint).
func (r *Receiver) Endpoint() string { return r.srv.URL + "/v1/traces" }

// URL is the base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
func (r *Receiver) URL() string { return r.srv.URL }

// Spans returns the spans received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// Requests returns how many spans each export request carried, in the
// order they arrived.
func (r *Receiver) Requests() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.reqs...)
}

// Service returns the service.name of a received span's resource.
func (r *Receiver) Service(s *tracepb.Span) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.svc[s]
}

// Reset forgets the spans received so far.
func (r *Receiver) Reset() {
	r.mu.Lock()
	r.spans, r.reqs = nil, nil
	r.mu.Unlock()
}

// ByName returns the first span named name, or nil.
func ByName(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

// Attr returns a span attribute's value: string, int64, float64 or bool.
func Attr(s *tracepb.Span, key string) (any, bool) {
	for _, a := range s.GetAttributes() {
		if a.GetKey() != key {
			continue
		}
		v := a.GetValue()
		switch {
		case v.GetStringValue() != "":
			return v.GetStringValue(), true
		case v.GetIntValue() != 0:
			return v.GetIntValue(), true
		case v.GetDoubleValue() != 0:
			return v.GetDoubleValue(), true
		}
		return v.GetBoolValue(), true
	}
	return nil, false
}

// Hex renders a span or trace id.
func Hex(b []byte) string { return hex.EncodeToString(b) }
