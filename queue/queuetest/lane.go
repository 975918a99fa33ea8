package queuetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// testLanes: jobs of different lanes of one chat (forum topics) run side
// by side, jobs of one lane one at a time in order, and the main lane ("")
// is a lane of its own; a malformed lane is refused naming the field
// (issue 26).
func testLanes(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{})
	main1 := enqueue(t, q, queue.Job{ChatID: -100, Goal: "main 1"})
	enqueue(t, q, queue.Job{ChatID: -100, Goal: "main 2"})
	t1 := enqueue(t, q, queue.Job{ChatID: -100, Lane: "t7", Goal: "topic 7, 1"})
	t1b := enqueue(t, q, queue.Job{ChatID: -100, Lane: "t7", Goal: "topic 7, 2"})
	t2 := enqueue(t, q, queue.Job{ChatID: -100, Lane: "t9", Goal: "topic 9"})
	ls, err := q.Claim(ctxT(t), "w", 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]queue.Lease{}
	for _, l := range ls {
		got[l.Job.ID] = l
	}
	if len(ls) != 3 || got[main1.ID].Job.ID == "" || got[t1.ID].Job.ID == "" || got[t2.ID].Job.ID == "" {
		t.Fatalf("Claim(10) got %d jobs, want the head of each lane (main 1, topic 7 1, topic 9)", len(ls))
	}
	if got[t1.ID].Job.Lane != "t7" {
		t.Fatalf("claimed job's lane %q, want t7", got[t1.ID].Job.Lane)
	}
	if err := q.Ack(ctxT(t), got[t1.ID], queue.Result{Status: queue.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	next := claimOne(t, q, "w2")
	if next.Job.ID != t1b.ID {
		t.Fatalf("after topic 7's first job, claimed %q, want topic 7's second", next.Job.Goal)
	}
	for _, bad := range []string{strings.Repeat("x", queue.MaxLaneLen+1), "a/b", "t 1"} {
		if _, _, err := q.Enqueue(ctxT(t), queue.Job{ChatID: 1, Goal: "g", Lane: bad}); !errors.Is(err, queue.ErrInvalidJob) || !strings.Contains(err.Error(), "lane") {
			t.Errorf("Enqueue with lane %q = %v, want ErrInvalidJob naming the lane", bad, err)
		}
	}
}
