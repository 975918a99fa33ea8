package queuetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/odekrun/odek/queue"
)

// testSteer: messages steered into a running job reach its worker in
// order, never twice; a finished job refuses new ones, and what its worker
// did not take is still there for the front end (issue 26).
func testSteer(t *testing.T, nq NewQueue) {
	q := nq(t, queue.Options{MaxPayloadBytes: 4096})
	st, ok := q.(queue.Steering)
	if !ok {
		t.Skip("queue does not implement queue.Steering")
	}
	j := enqueue(t, q, queue.Job{ChatID: 7, Goal: "long task"})
	if err := st.Steer(ctxT(t), j.ID, "first"); err != nil {
		t.Fatalf("Steer into a waiting job: %v", err)
	}
	l := claimOne(t, q, "w1")
	if err := st.Steer(ctxT(t), j.ID, "second"); err != nil {
		t.Fatalf("Steer into a running job: %v", err)
	}
	got, err := st.TakeSteer(ctxT(t), j.ID)
	if err != nil || !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("TakeSteer = %q, %v; want first, second", got, err)
	}
	if got, err := st.TakeSteer(ctxT(t), j.ID); err != nil || len(got) != 0 {
		t.Fatalf("second TakeSteer = %q, %v; want nothing (taken once)", got, err)
	}
	if err := st.Steer(ctxT(t), j.ID, strings.Repeat("x", 4097)); !errors.Is(err, queue.ErrPayloadTooLarge) {
		t.Fatalf("Steer over MaxPayloadBytes = %v, want ErrPayloadTooLarge", err)
	}
	for i := range queue.MaxSteerPending {
		if err := st.Steer(ctxT(t), j.ID, "m"+string(rune('a'+i))); err != nil {
			t.Fatalf("Steer %d: %v", i, err)
		}
	}
	if err := st.Steer(ctxT(t), j.ID, "one too many"); !errors.Is(err, queue.ErrSteerFull) {
		t.Fatalf("Steer past MaxSteerPending = %v, want ErrSteerFull", err)
	}
	if err := q.Ack(ctxT(t), l, queue.Result{Status: queue.StatusSucceeded, Answer: "done"}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := st.Steer(ctxT(t), j.ID, "late"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Steer into a finished job = %v, want ErrNotFound", err)
	}
	if err := st.Steer(ctxT(t), "no-such-job", "x"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Steer into an unknown job = %v, want ErrNotFound", err)
	}
	left, err := st.TakeSteer(ctxT(t), j.ID)
	if err != nil || len(left) != queue.MaxSteerPending {
		t.Fatalf("leftovers after the job ended = %d, %v; want %d for the front end", len(left), err, queue.MaxSteerPending)
	}
}
