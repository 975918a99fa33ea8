package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

// benchFlow pushes b.N no-op jobs (one chat each) through enqueue → claim →
// ack with the given number of producers and consumers and reports jobs/s.
// With parallelAck each claimed batch is acked from one goroutine per job, as
// a worker running jobs concurrently would.
func benchFlow(b *testing.B, q queue.Queue, producers, consumers, batch int, parallelAck bool) {
	ctx := context.Background()
	var next, acked atomic.Int64
	total := int64(b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: i, Goal: "noop"}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			for acked.Load() < total {
				ls, err := q.Claim(ctx, name, batch, 20*time.Millisecond)
				if err != nil {
					b.Error(err)
					return
				}
				var aw sync.WaitGroup
				for _, l := range ls {
					ack := func() {
						if err := q.Ack(ctx, l, queue.Result{Answer: "ok"}); err != nil {
							b.Error(err)
						}
						acked.Add(1)
					}
					if parallelAck {
						aw.Go(ack)
					} else {
						ack()
					}
				}
				aw.Wait()
			}
		}(fmt.Sprintf("c%d", c))
	}
	wg.Wait()
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "jobs/s")
}

func BenchmarkRedisEnqueueClaimAck(b *testing.B) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	for _, tc := range []struct {
		cons     int
		parallel bool
	}{{1, false}, {4, false}, {1, true}, {4, true}} {
		cons := tc.cons
		b.Run(fmt.Sprintf("consumers=%d/parallelAck=%v", cons, tc.parallel), func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 16})
			defer c.Close()
			q, err := queue.NewRedis(context.Background(), c, queue.Options{Prefix: fmt.Sprintf("b%d:%v:%d:", cons, tc.parallel, b.N)})
			if err != nil {
				b.Fatal(err)
			}
			benchFlow(b, q, 4, cons, 64, tc.parallel)
		})
	}
}

func BenchmarkMemoryEnqueueClaimAck(b *testing.B) {
	benchFlow(b, queue.NewMemory(queue.Options{}), 4, 4, 64, false)
}

func BenchmarkRedisEnqueueOnly(b *testing.B) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	q, err := queue.NewRedis(context.Background(), c, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: n.Add(1), Goal: "noop"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRedisIdlePickup measures Enqueue → Claim return for an idle
// worker blocked in Claim, reporting the median and p99 in µs.
func BenchmarkRedisIdlePickup(b *testing.B) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	q, err := queue.NewRedis(context.Background(), c, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pickup(b, q)
}

func BenchmarkMemoryIdlePickup(b *testing.B) { pickup(b, queue.NewMemory(queue.Options{})) }

func pickup(b *testing.B, q queue.Queue) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		got := make(chan time.Time, 1)
		ready := make(chan struct{})
		go func() {
			close(ready)
			for {
				ls, err := q.Claim(ctx, "idle", 1, 5*time.Second)
				if err != nil {
					b.Error(err)
					got <- time.Time{}
					return
				}
				if len(ls) == 1 {
					t := time.Now()
					if err := q.Ack(ctx, ls[0], queue.Result{}); err != nil {
						b.Error(err)
					}
					got <- t
					return
				}
			}
		}()
		<-ready
		time.Sleep(200 * time.Microsecond) // let the worker block: this is the idle state being measured
		start := time.Now()
		if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i + 1), Goal: "noop"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
