package queue_test

import (
	"context"
	"testing"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

func TestMemoryBudgets(t *testing.T) {
	queuetest.RunBudgets(t, func(t *testing.T) queue.Budgets { return queue.NewMemory(queue.Options{}) })
}

// The budget scripts run unchanged on one node and on a cluster (their
// keys share the queue's hash tag).
func TestRedisBudgets(t *testing.T) {
	t.Parallel() // every (sub)test has servers of its own
	for _, mode := range []string{queue.ModeSingle, queue.ModeCluster} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := queuetest.StartTopology(t, mode).Client()
			n := 0
			queuetest.RunBudgets(t, func(t *testing.T) queue.Budgets {
				n++
				q, err := queue.NewRedis(context.Background(), c, queue.Options{Prefix: "b" + string(rune('a'+n)) + ":"})
				if err != nil {
					t.Fatal(err)
				}
				return q
			})
		})
	}
}
