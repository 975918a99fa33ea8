package embedded_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
)

// BenchmarkOpenWith10kFinished: Open of a store holding 10,000 finished,
// delivered jobs (odek-bot's start-up share of the store; target ≤ 200 ms).
func BenchmarkOpenWith10kFinished(b *testing.B) {
	path := filepath.Join(b.TempDir(), "store.db")
	s, err := embedded.Open(path, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const n = 10000
	var wg sync.WaitGroup
	for p := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 50 {
				if _, _, err := s.Enqueue(ctx, queue.Job{ChatID: int64(p + 1), Goal: "job", IdempotencyKey: fmt.Sprint(p, "-", i)}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for done := 0; done < n; {
		ls, err := s.Claim(ctx, "w", 64, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			wg.Add(1)
			go func() { defer wg.Done(); _ = s.Ack(ctx, l, queue.Result{Answer: "done"}) }()
		}
		wg.Wait()
		done += len(ls)
		ds, _ := s.ReadResults(ctx, "bot", 1000, 0)
		for _, d := range ds {
			wg.Add(1)
			go func() { defer wg.Done(); _ = s.AckResult(ctx, d) }()
		}
		wg.Wait()
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		s, err := embedded.Open(path, queue.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "open-ms")
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkEnqueue16Producers: 16 goroutines enqueueing at once, each
// Enqueue returning when its job is durable (group commit). Reports
// jobs/s and jobs per commit (per fsync pair): the figure the committer's
// gathering raises.
func BenchmarkEnqueue16Producers(b *testing.B) {
	s, err := embedded.Open(filepath.Join(b.TempDir(), "store.db"), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	start, c0 := time.Now(), s.Commits()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for p := range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, _, err := s.Enqueue(ctx, queue.Job{ChatID: int64(p + 1), Goal: "job"}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
	b.ReportMetric(float64(b.N)/float64(max(s.Commits()-c0, 1)), "jobs/commit")
}
