package queue_test

import (
	"context"
	"testing"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

func TestRedisConformance(t *testing.T) {
	c := queuetest.StartRedis(t)
	n := 0
	queuetest.Run(t, func(t *testing.T, o queue.Options) queue.Queue {
		n++ // a fresh prefix per subtest keeps them apart on one server
		o.Prefix = "t" + string(rune('a'+n)) + ":"
		q, err := queue.NewRedis(context.Background(), c, o)
		if err != nil {
			t.Fatal(err)
		}
		return q
	})
}
