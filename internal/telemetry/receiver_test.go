package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

type receiver = telemetrytest.Receiver

func newReceiver(t testing.TB) *receiver { return telemetrytest.NewReceiver(t) }

// setup turns tracing on towards r for the test and off after it.
func setup(t *testing.T, r *receiver, mod func(*telemetry.Config), opts telemetry.Options) *telemetry.Provider {
	t.Helper()
	cfg := telemetry.Config{Enabled: true, Endpoint: r.Endpoint(), ScheduleWait: 10 * time.Millisecond}
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
func flush(t *testing.T, r *receiver, p *telemetry.Provider) []*tracepb.Span {
	t.Helper()
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r.Spans()
}

var (
	byName = telemetrytest.ByName
	attr   = telemetrytest.Attr
	hexID  = telemetrytest.Hex
)
