package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/odekrun/odek/queue"
)

// A job's kind is one the workers know: a misspelt one is refused at
// enqueue, naming the field, instead of running as a chat turn.
func TestEnqueueChecksTheKind(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	_, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: 1, Goal: "/compact", Kind: "compcat"})
	if !errors.Is(err, queue.ErrInvalidJob) || !strings.Contains(err.Error(), `kind "compcat"`) {
		t.Fatalf("err = %v, want ErrInvalidJob naming the kind", err)
	}
	stored, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: 1, Goal: "/compact", Kind: queue.KindCompact})
	if err != nil || stored.Kind != queue.KindCompact {
		t.Fatalf("compact job: %+v, %v", stored, err)
	}
}
