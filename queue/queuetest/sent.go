package queuetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// testSentRecord: a result's delivery progress (queue.SentRecorder) comes
// back with the result when it is delivered again (here to another front
// end after the result lease), the last record wins, a bad record is
// refused naming the field, and acknowledging the result drops it.
func testSentRecord(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{ResultLeaseTTL: 150 * time.Millisecond})
	rec, ok := q.(queue.SentRecorder)
	if !ok {
		t.Fatalf("%T does not implement queue.SentRecorder", q)
	}
	for i := range 2 {
		enqueue(t, q, queue.Job{ChatID: int64(300 + i), Goal: "g"})
	}
	for _, l := range claimUntil(t, q, "w", 5*time.Second) {
		if err := q.Ack(ctxT(t), l, queue.Result{Answer: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	first := readResults(t, q, "fe1", 2)
	if len(first) != 2 {
		t.Fatalf("read %d results, want 2", len(first))
	}
	for _, d := range first {
		if d.Sent.Steps != 0 || d.Sent.MessageIDs != nil {
			t.Fatalf("a first delivery carries sent %+v; want none", d.Sent)
		}
	}
	d, other := first[0], first[1]
	for _, bad := range []struct {
		s    queue.Sent
		want string
	}{
		{queue.Sent{Steps: 0}, "steps 0"},
		{queue.Sent{Steps: queue.MaxSentSteps + 1}, "steps"},
		{queue.Sent{Steps: 1, MessageIDs: make([]int, queue.MaxSentIDs+1)}, "message ids"},
	} {
		if err := rec.RecordSent(ctxT(t), d, bad.s); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("RecordSent(%d steps, %d ids) = %v; want an error naming %q", bad.s.Steps, len(bad.s.MessageIDs), err, bad.want)
		}
	}
	if err := rec.RecordSent(ctxT(t), d, queue.Sent{Steps: 1, MessageIDs: []int{41}}); err != nil {
		t.Fatal(err)
	}
	want := queue.Sent{Steps: 2, MessageIDs: []int{41, 42}}
	if err := rec.RecordSent(ctxT(t), d, want); err != nil {
		t.Fatal(err)
	}
	// fe1 "dies"; fe2 takes both over after the result lease.
	again := readResults(t, q, "fe2", 2)
	if len(again) != 2 {
		t.Fatalf("fe2 read %d results, want 2", len(again))
	}
	for _, a := range again {
		switch a.Result.JobID {
		case d.Result.JobID:
			if !reflect.DeepEqual(a.Sent, want) {
				t.Errorf("redelivered result carries sent %+v; want %+v", a.Sent, want)
			}
		case other.Result.JobID:
			if a.Sent.Steps != 0 {
				t.Errorf("the other result carries sent %+v; want none", a.Sent)
			}
		}
		if err := q.AckResult(ctxT(t), a); err != nil {
			t.Fatal(err)
		}
	}
	// After AckResult a record is not kept (nor an error).
	if err := rec.RecordSent(ctxT(t), d, queue.Sent{Steps: 3}); err != nil {
		t.Fatalf("RecordSent after AckResult: %v; want nil", err)
	}
	if ds, err := q.ReadResults(ctxT(t), "fe3", 10, 300*time.Millisecond); err != nil || len(ds) != 0 {
		t.Fatalf("after the acks ReadResults = %d, %v; want none", len(ds), err)
	}
}
