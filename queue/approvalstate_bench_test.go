package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// What approvals that survive add to a bot's approvals loop and to a
// worker's prompt, on one redis-server: the loop's idle sweep for expired
// questions (ExpiredApprovals, once per loop turn) beside the idle
// ReadApprovals the loop already made, and the worker's grant check
// (SessionGranted, once per question) beside Ask.
func BenchmarkRedisApprovalState(b *testing.B) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{Prefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	const question = "odek: allow shell (code_execution, argv0=make, command=make deploy)? [y/N] "
	if err := q.GrantSession(ctx, "telegram:1", question, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.Run("ReadApprovals-idle", func(b *testing.B) {
		for range b.N {
			if _, err := q.ReadApprovals(ctx, "fe", 16, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ExpiredApprovals-idle", func(b *testing.B) {
		for range b.N {
			if _, err := q.ExpiredApprovals(ctx, 16); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Ask", func(b *testing.B) {
		for range b.N {
			if _, err := q.Ask(ctx, queue.Approval{JobID: "j1", ChatID: 1, Question: question, Deadline: time.Now().Add(time.Minute)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SessionGranted", func(b *testing.B) {
		for range b.N {
			if ok, err := q.SessionGranted(ctx, "telegram:1", question); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}
