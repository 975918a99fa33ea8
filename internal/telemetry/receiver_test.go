package telemetry_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is a loopback OTLP/HTTP endpoint that decodes what the real
// exporter sends (protobuf over HTTP, as a collector receives it).
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	svc   []string // service.name of each span's resource
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
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
					r.svc = append(r.svc, svc)
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// setup turns tracing on towards r for the test and off after it.
func setup(t *testing.T, r *receiver, mod func(*telemetry.Config), opts telemetry.Options) *telemetry.Provider {
	t.Helper()
	cfg := telemetry.Config{Enabled: true, Endpoint: r.srv.URL + "/v1/traces", ScheduleWait: 10 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	p, err := telemetry.Setup(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

// flush exports everything ended so far and returns the spans received.
func (r *receiver) flush(t *testing.T, p *telemetry.Provider) []*tracepb.Span {
	t.Helper()
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func byName(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

func attr(s *tracepb.Span, key string) (any, bool) {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
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
	}
	return nil, false
}

func hexID(b []byte) string { return hex.EncodeToString(b) }
