package schedule

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/queue/queuetest"
)

// BenchmarkFireLag1000Due3Runners: 1,000 schedules due at the same moment,
// three runners (each with its own Redis connection and queue value, as
// three processes) firing them into a real Redis queue. Reports the fire
// lag (scheduled time to job enqueued) p50 and p99 and the runners'
// fires/s. The target: p99 ≤ 1 s.
func BenchmarkFireLag1000Due3Runners(b *testing.B) { fireLag(b, false) }

// The same with the budgets checked before every fire (budget.go): a
// policy stored, each fire reserving against its chat's and its owner's
// caps (one pipelined batch of reserve scripts per 32 fires).
func BenchmarkFireLag1000Due3RunnersBudgets(b *testing.B) { fireLag(b, true) }

func fireLag(b *testing.B, budgets bool) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	ctx := context.Background()
	var lags []time.Duration
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := srv.Client().FlushAll(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		st := NewRedis(srv.Client(), "")
		due := time.Now().Add(5 * time.Second).Truncate(time.Millisecond)
		var cw sync.WaitGroup
		for w := 0; w < 8; w++ {
			cw.Add(1)
			go func() {
				defer cw.Done()
				for j := w; j < 1000; j += 8 {
					s, _, err := Prepare(Schedule{ChatID: int64(j + 1), UserID: int64(j%50 + 1), Spec: "every 1m", Text: "x"}, Limits{}, due.Add(-time.Minute))
					if err != nil {
						b.Error(err)
						return
					}
					if err := st.Create(ctx, s, 0); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		cw.Wait()
		if time.Now().After(due) {
			b.Fatal("creating the schedules took longer than 5 s")
		}
		if budgets {
			q, err := queue.NewRedis(ctx, srv.Client(), queue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := q.PutBudgetPolicy(ctx, queue.BudgetPolicy{ChatDayTokens: 1000000, User: queue.Caps{DayTokens: 5000000, MonthUSD: 100},
				JobMaxTokens: 50000, JobMaxUSD: 0.5}); err != nil {
				b.Fatal(err)
			}
		}
		var mu sync.Mutex
		var runners []*Runner
		for r := 0; r < 3; r++ {
			q, err := queue.NewRedis(ctx, srv.Client(), queue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			runners = append(runners, &Runner{Store: NewRedis(srv.Client(), ""), Queue: q, Name: fmt.Sprint("r", r), Parallel: benchParallel,
				Observe: func(f Fire, lag time.Duration, dup bool) { mu.Lock(); lags = append(lags, lag); mu.Unlock() }})
		}
		time.Sleep(time.Until(due))
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for _, r := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Tick(ctx); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
		b.StopTimer()
		if n, _ := st.Pending(ctx); n != 0 {
			b.Fatalf("%d fires pending", n)
		}
	}
	if len(lags) != 1000*b.N {
		b.Fatalf("%d fires, want %d", len(lags), 1000*b.N)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "p50-lag-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Milliseconds()), "p99-lag-ms")
	b.ReportMetric(float64(1000*b.N)/total.Seconds(), "fires/s")
}

var benchParallel = 0

// BenchmarkClaimComplete: one fire's store round trips on Redis (claim,
// then complete), without the queue: the claim latency.
func BenchmarkClaimComplete(b *testing.B) {
	c := queuetest.StartRedis(b)
	ctx := context.Background()
	st := NewRedis(c, "")
	s := mk(&testing.T{}, 1, "every 1s", t0)
	if err := st.Create(ctx, s, 0); err != nil {
		b.Fatal(err)
	}
	next := s.Next
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := st.Claim(ctx, Claim{ID: s.ID, Expected: next, Next: next.Add(time.Second), Job: BuildJob(s, next), At: next, Owner: "b", Lease: time.Minute, Now: next})
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Complete(ctx, f, FireResult{JobID: f.Job.ID}); err != nil {
			b.Fatal(err)
		}
		next = next.Add(time.Second)
	}
}

// TestRedisMemoryPerSchedule logs what 2,000 schedules cost in Redis
// (used_memory before and after), for docs/BENCHMARKS.md.
func TestRedisMemoryPerSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 2,000 schedules")
	}
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	used := func() int64 {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("no used_memory")
		return 0
	}
	st := NewRedis(c, "")
	before := used()
	const n = 2000
	for i := 0; i < n; i++ {
		s, _, err := Prepare(Schedule{ChatID: int64(i%500 + 1), UserID: 7, Spec: "0 9 * * 1-5", TZ: "Europe/Berlin", Text: "summarise the open issues of the project"}, Limits{}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Create(ctx, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(used()-before) / n
	t.Logf("Redis memory per schedule: %.0f bytes (%d schedules in 500 chats, a 41-byte goal)", per, n)
	if per <= 0 {
		t.Fatal("no memory measured")
	}
}

// BenchmarkEmbeddedStoreCreate: one Service.Create per op on the embedded
// store (the schedules in the embedded queue's bbolt file, one durable
// write per change) against the file store it replaces (rewrite, fsync,
// rename under a flock), in the same run.
func BenchmarkEmbeddedStoreCreate(b *testing.B) {
	for _, impl := range []string{"embedded", "file"} {
		b.Run(impl, func(b *testing.B) {
			dir := b.TempDir()
			var st Store
			if impl == "embedded" {
				es, err := embedded.Open(filepath.Join(dir, "store.db"), queue.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer es.Close()
				st = NewKV(es)
			} else {
				st = NewFile(filepath.Join(dir, "schedules.json"))
			}
			sv := &Service{Store: st, Limits: Limits{MaxPerChat: 1 << 20, MaxPerUser: 1 << 20, MaxDailyFires: 1 << 30}}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := sv.Create(ctx, Owner{ChatID: int64(i%50 + 1), Operator: true}, Schedule{ChatID: int64(i%50 + 1), Spec: "every 1h", Text: "check the build"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
