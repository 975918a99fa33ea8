package main_test

import (
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Both OTLP protocols of the real binary reach a real OpenTelemetry
// Collector (issue 25: odek encodes OTLP itself instead of linking the
// upstream exporters, so each protocol is checked against a peer no one
// here wrote): http/protobuf to the HTTP receiver, grpc to the gRPC one
// over cleartext HTTP/2.
func TestRunExportsOverBothProtocolsToCollector(t *testing.T) {
	col := telemetrytest.StartCollector(t)
	for _, tc := range []struct{ protocol, endpoint string }{
		{"http/protobuf", col.OTLPHTTP},
		{"grpc", col.OTLPGRPC},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Reply("done"))
			out := runOdekEnv(t, srv.URL, t.TempDir(), []string{traceparent, "OTEL_BSP_SCHEDULE_DELAY=10",
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + tc.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + tc.protocol,
				"OTEL_SERVICE_NAME=odek-" + tc.protocol}, "run", "answer")
			if out.code != 0 {
				t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
			}
			var got *tracepb.Span
			col.WaitSpans(t, 30*time.Second, func(spans []*tracepb.Span) bool {
				for _, s := range spans {
					if s.GetName() == "odek run" && col.Service(s) == "odek-"+tc.protocol {
						got = s
						return true
					}
				}
				return false
			})
			if telemetrytest.Hex(got.GetTraceId()) != givenTrace || telemetrytest.Hex(got.GetParentSpanId()) != givenParent {
				t.Errorf("trace %s parent %s, want %s / %s", telemetrytest.Hex(got.GetTraceId()),
					telemetrytest.Hex(got.GetParentSpanId()), givenTrace, givenParent)
			}
		})
	}
}
