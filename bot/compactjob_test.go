package bot

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

// fakeCompactWorker claims one job from q and publishes evs on its
// progress stream (a summary line first, as the worker does), then
// acknowledges it; it returns the job it claimed.
func fakeCompactWorker(t *testing.T, q queue.Queue, evs ...events.Payload) <-chan queue.Job {
	t.Helper()
	got := make(chan queue.Job, 1)
	if err := q.(queue.Inspector).RegisterWorker(context.Background(), queue.WorkerInfo{Name: "w"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	go func() {
		ctx := context.Background()
		var ls []queue.Lease
		for len(ls) == 0 {
			var err error
			if ls, err = q.Claim(ctx, "w", 1, time.Second); err != nil {
				t.Error(err)
				close(got)
				return
			}
		}
		l := ls[0]
		q.PublishProgress(ctx, l.Job.ID, []byte(`{"schema":"odek.progress/v1","state":"started"}`))
		for i, p := range evs {
			b, _ := json.Marshal(events.Event{Schema: events.Schema, Type: p.EventType(), Seq: uint64(i + 1), RunID: l.Job.ID, Data: p.Data()})
			q.PublishProgress(ctx, l.Job.ID, b)
		}
		q.Ack(ctx, l, queue.Result{Answer: "compacted"})
		got <- l.Job
	}()
	return got
}

// QueueCompactor (the compose bot's /compact) asks a worker with a
// compact job for the chat's session and model, and reads the worker's
// report from the job's progress stream.
func TestQueueCompactorReadsTheWorkersReport(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	jobs := fakeCompactWorker(t, q, events.ContextCompactedData{BeforeTokens: 9000, AfterTokens: 2000, FoldedGroups: 5,
		SideCallInputTokens: 7000, SideCallOutputTokens: 300})
	qc := &QueueCompactor{Queue: q}
	res, err := qc.Compact(context.Background(), CompactRequest{ChatID: 7, Session: "telegram:7:s2", Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	want := Compacted{Folded: 5, BeforeTokens: 9000, AfterTokens: 2000, SideInputTokens: 7000, SideOutput: 300}
	if res != want {
		t.Errorf("Compact = %+v, want %+v", res, want)
	}
	job := <-jobs
	if job.Kind != queue.KindCompact || job.ChatID != 7 || job.SessionID != "telegram:7:s2" || job.Model != "m2" ||
		!strings.HasPrefix(job.ID, CompactJobPrefix) {
		t.Errorf("the job asked for %+v", job)
	}
	if !qc.reported[job.ID] {
		t.Error("the reported job is not remembered: its result would be shown as a second message")
	}
}

// A worker's failure reaches the chat as an error naming its class.
func TestQueueCompactorReportsTheWorkersFailure(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	fakeCompactWorker(t, q, events.RunFailedData{ErrorClass: "rate_limited"})
	_, err := (&QueueCompactor{Queue: q}).Compact(context.Background(), CompactRequest{ChatID: 7, Session: "s"})
	if err == nil || !strings.Contains(err.Error(), "rate_limited") {
		t.Fatalf("err = %v, want the worker's failure class", err)
	}
}

// With no worker to report, /compact fails after Wait and the job is
// canceled, so a worker that comes later does not compact behind the
// chat's next job.
func TestQueueCompactorCancelsAnUnansweredJob(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	q.RegisterWorker(context.Background(), queue.WorkerInfo{Name: "busy"}, time.Minute) // announced, never claims
	_, err := (&QueueCompactor{Queue: q, Wait: 50 * time.Millisecond}).Compact(context.Background(), CompactRequest{ChatID: 7, Session: "s"})
	if err == nil || !strings.Contains(err.Error(), "no worker reported") {
		t.Fatalf("err = %v", err)
	}
	ls, err := q.Claim(context.Background(), "late", 1, 0)
	if err != nil || len(ls) != 0 {
		t.Fatalf("a late worker claimed %d jobs (%v); the unanswered compaction must be canceled", len(ls), err)
	}
}

// A worker that finished without its report reaching the stream: the
// chat is told the report was lost, and the job's result (which says what
// the worker did) is not suppressed but shown when it arrives.
func TestQueueCompactorLostReportLeavesTheResult(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	jobs := fakeCompactWorker(t, q) // no events
	qc := &QueueCompactor{Queue: q, Wait: 2 * time.Second}
	_, err := qc.Compact(context.Background(), CompactRequest{ChatID: 7, Session: "s"})
	job := <-jobs
	if err == nil || !strings.Contains(err.Error(), "report was lost") {
		t.Fatalf("err = %v", err)
	}
	if qc.reported[job.ID] {
		t.Error("the finished job's result would be dropped although the chat was not told what it did")
	}
}

// With no worker announced, /compact fails at once instead of holding
// the chat for Wait, and enqueues nothing.
func TestQueueCompactorWithoutWorkers(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	_, err := (&QueueCompactor{Queue: q}).Compact(context.Background(), CompactRequest{ChatID: 7, Session: "s"})
	if err == nil || !strings.Contains(err.Error(), "no worker is running") {
		t.Fatalf("err = %v", err)
	}
	if ls, _ := q.Claim(context.Background(), "late", 1, 0); len(ls) != 0 {
		t.Fatal("a compaction job was enqueued with no worker to run it")
	}
}
