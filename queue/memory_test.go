package queue_test

import (
	"testing"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T, o queue.Options) queue.Queue { return queue.NewMemory(o) })
}
