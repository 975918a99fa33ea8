package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/telemetry/telemetrytest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/worker"
)

// A job that carries a trace context (issue 24) is run under it: the
// worker's odek.job span is a child of the enqueuer's span, the run and the
// agent's rebuilt spans hang below it, and the progress events carry the
// trace id.
func TestJobJoinsEnqueuersTrace(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Setup(context.Background(), telemetry.Config{Enabled: true, Endpoint: rcv.Endpoint(), ScheduleWait: 10 * time.Millisecond},
		telemetry.Options{Service: "odek-worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())

	srv := llmtest.New(t, llmtest.Reply("forty-two"))
	q := newQueue(t, "redis", queue.Options{})
	start(t, worker.Config{Queue: q, Run: agentRun(srv.URL), Name: "w1"})
	ctx, enq := telemetry.StartProducer(context.Background(), "bot.enqueue")
	j := enqueue(t, q, queue.Job{ChatID: 7, Goal: "what is the answer?", Trace: telemetry.ToMap(ctx)})
	enq.End()
	if res := waitResult(t, q, j.ID); res.Status != queue.StatusSucceeded {
		t.Fatalf("result %+v", res)
	}
	spans := rcv.Spans()
	for deadline := time.Now().Add(10 * time.Second); telemetrytest.ByName(spans, "odek.job") == nil && time.Now().Before(deadline); {
		_ = p.ForceFlush(context.Background()) // the job span ends after the result is published
		spans = rcv.Spans()
	}
	tid := enq.SpanContext().TraceID().String()
	parentOf := map[string]string{
		"odek.job":          enq.SpanContext().SpanID().String(),
		"odek.job.claim":    "odek.job",
		"odek.job.run":      "odek.job",
		"odek.job.ack":      "odek.job",
		"invoke_agent odek": "odek.job.run",
		"chat test-model":   "invoke_agent odek",
	}
	for name, parent := range parentOf {
		s := telemetrytest.ByName(spans, name)
		if s == nil {
			t.Fatalf("no span %q among %d", name, len(spans))
		}
		if telemetrytest.Hex(s.GetTraceId()) != tid {
			t.Errorf("%s in another trace", name)
		}
		want := parent
		if ps := telemetrytest.ByName(spans, parent); ps != nil {
			want = telemetrytest.Hex(ps.GetSpanId())
		}
		if got := telemetrytest.Hex(s.GetParentSpanId()); got != want {
			t.Errorf("%s: parent %s, want %s (%s)", name, got, want, parent)
		}
	}
	job := telemetrytest.ByName(spans, "odek.job")
	for k, want := range map[string]any{telemetry.KeyJobID: j.ID, telemetry.KeyChatID: int64(7), telemetry.KeyWorker: "w1", telemetry.KeyStatus: "succeeded"} {
		if got, _ := telemetrytest.Attr(job, k); got != want {
			t.Errorf("odek.job %s = %v, want %v", k, got, want)
		}
	}
	ps, err := q.ReadProgress(context.Background(), j.ID, "", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var stamped int
	for _, pr := range ps {
		var ev events.Event
		if json.Unmarshal(pr.Data, &ev) == nil && ev.Schema == events.Schema {
			if ev.TraceID != tid || ev.SpanID == "" {
				t.Errorf("event %s: trace %q span %q", ev.Type, ev.TraceID, ev.SpanID)
			}
			stamped++
		}
	}
	if stamped == 0 {
		t.Fatal("no events in the progress stream")
	}
}
