package worker_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/odekrun/odek/worker"
	"github.com/redis/go-redis/v9"
)

// fakeLLM serves an instant answer — the whole stream in one write, as a
// server with the answer ready sends it — without recording requests; onRequest
// (may be nil) sees every request's last message.
func fakeLLM(b *testing.B, onRequest func(goal string)) string {
	h := llmtest.NewScriptHandler(func(r llmtest.Recorded) llmtest.Turn {
		if onRequest != nil {
			onRequest(r.LastMessage().Content)
		}
		return llmtest.Turn{Content: "ok", Burst: true}
	})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// noopRun runs the real agent loop against the fake model with one shared
// client, as `odek worker` does.
func noopRun(url string) worker.RunFunc {
	client, err := llm.New(llm.Config{BaseURL: url, APIKey: "sk-bench"})
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context, job queue.Job, sink events.Sink, _ func(agent.SignalEvent), p tools.Prompter) (queue.Result, error) {
		res, err := agent.Run(ctx, agent.Config{LLM: client, Model: "m", EventSink: sink, Prompter: p}, job.Goal)
		return queue.Result{Answer: res.Answer}, err
	}
}

func startBenchWorker(b *testing.B, addr, name string, conc int, run worker.RunFunc) {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	q, err := queue.NewRedis(context.Background(), c, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := worker.New(worker.Config{Queue: q, Run: run, Name: name, Concurrency: conc})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = w.Run(context.Background()); close(done) }()
	b.Cleanup(func() {
		_ = w.Shutdown(context.Background())
		<-done
		c.Close()
	})
}

// BenchmarkNoopJobs: b.N jobs (one chat each) enqueued by 16 producers,
// run by the real agent answering at once from the fake model, results read
// and acknowledged by a front end; workers are in-process, each with its own
// Redis connection pool and concurrency 8.
func BenchmarkNoopJobs(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			srv := queuetest.StartServer(b, queuetest.ServerOptions{})
			url := fakeLLM(b, nil)
			for i := range workers {
				startBenchWorker(b, srv.Addr, "w"+strconv.Itoa(i), 8, noopRun(url))
			}
			fe := srv.Client()
			q, err := queue.NewRedis(context.Background(), fe, queue.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: i, Goal: "noop"}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			got := 0
			for got < b.N {
				ds, err := q.ReadResults(ctx, "fe", 256, 100*time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range ds {
					if d.Result.Status != queue.StatusSucceeded {
						b.Fatalf("result %+v", d.Result)
					}
					if err := q.AckResult(ctx, d); err != nil {
						b.Fatal(err)
					}
				}
				got += len(ds)
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEnqueueToFirstLLMRequest: an idle worker; time from the start of
// Enqueue to the fake model receiving the job's first request, one job at a
// time (light load). Reports p50 and p99 in µs.
func BenchmarkEnqueueToFirstLLMRequest(b *testing.B) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	url := fakeLLM(b, func(goal string) {
		mu.Lock()
		if _, ok := arrived[goal]; !ok {
			arrived[goal] = time.Now()
		}
		mu.Unlock()
	})
	startBenchWorker(b, srv.Addr, "w", 8, noopRun(url))
	q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		goal := "lat-" + strconv.Itoa(i)
		time.Sleep(2 * time.Millisecond) // idle between jobs: light load is what is measured
		start := time.Now()
		j, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i + 1), Goal: goal})
		if err != nil {
			b.Fatal(err)
		}
		for done := false; !done; {
			ds, err := q.ReadResults(ctx, "fe", 10, time.Second)
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range ds {
				_ = q.AckResult(ctx, d)
				done = done || d.Result.JobID == j.ID
			}
		}
		mu.Lock()
		lat = append(lat, arrived[goal].Sub(start))
		mu.Unlock()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
