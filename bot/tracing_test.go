package bot

import (
	"context"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	"github.com/odekrun/odek/queue"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// A Telegram message is one trace (issue 24): telegram.update → the
// odek.enqueue producer span, whose context the job carries (a worker
// continues it: here the in-test worker opens odek.job from Job.Trace as
// the real one does), and telegram.deliver, a child of the enqueue span
// in the same trace, linked back to the update. Spans go to an in-process
// OTLP/HTTP receiver through the real exporter.
func TestMessageIsOneTrace(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint(), ScheduleWait: 10 * time.Millisecond},
		telemetry.Options{Service: "odek-bot"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		_, s := telemetry.StartConsumer(telemetry.FromMap(ctx, l.Job.Trace), "odek.job")
		s.End()
		return queue.Result{Answer: "traced answer"}
	})
	upd := h.tg.UserMessage(alice, alice, "the secret prompt")
	h.waitVisible(alice, "traced answer")

	var spans []*tracepb.Span
	find := func(name string) *tracepb.Span {
		for _, s := range spans {
			if s.GetName() == name {
				return s
			}
		}
		return nil
	}
	for deadline := time.Now().Add(wait); ; {
		_ = p.ForceFlush(context.Background())
		spans = rcv.Spans()
		if find("telegram.deliver") != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	update, enq, job, deliver := find("telegram.update"), find("odek.enqueue"), find("odek.job"), find("telegram.deliver")
	if update == nil || enq == nil || job == nil || deliver == nil {
		t.Fatalf("spans: update %v enqueue %v job %v deliver %v", update != nil, enq != nil, job != nil, deliver != nil)
	}
	tid := telemetrytest.Hex(update.GetTraceId())
	for _, pc := range []struct {
		s, parent *tracepb.Span
	}{{enq, update}, {job, enq}, {deliver, enq}} {
		if telemetrytest.Hex(pc.s.GetTraceId()) != tid || telemetrytest.Hex(pc.s.GetParentSpanId()) != telemetrytest.Hex(pc.parent.GetSpanId()) {
			t.Errorf("%s: not a child of %s in trace %s", pc.s.GetName(), pc.parent.GetName(), tid)
		}
	}
	if v, _ := telemetrytest.Attr(update, "telegram.update_id"); v != int64(upd) {
		t.Errorf("update id = %v, want %d", v, upd)
	}
	if len(deliver.GetLinks()) != 1 || telemetrytest.Hex(deliver.GetLinks()[0].GetSpanId()) != telemetrytest.Hex(update.GetSpanId()) {
		t.Errorf("delivery links %v, want the update's span", deliver.GetLinks())
	}
	if v, _ := telemetrytest.Attr(enq, telemetry.KeyJobID); v == nil || v == "" {
		t.Error("enqueue span has no job id")
	}
	for _, s := range spans {
		for _, a := range s.GetAttributes() {
			if a.GetValue().GetStringValue() == "the secret prompt" {
				t.Errorf("%s carries the message text", s.GetName())
			}
		}
	}
}
