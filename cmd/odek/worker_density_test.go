package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// BenchmarkWorkerDensity runs one real `odek worker --concurrency 1000`
// with 1,000 jobs whose model call waits 4 s, and reports the worker's peak
// resident memory (VmHWM), the time to submit the jobs, and the time from
// the first submit until the last result was read back. Run it alone:
//
//	go test -run '^$' -bench WorkerDensity -benchtime 1x ./cmd/odek/
func BenchmarkWorkerDensity(b *testing.B) {
	const jobs, wait = 1000, 4 * time.Second
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	llm := llmtest.NewHandler(b, func(r llmtest.Recorded) llmtest.Turn {
		time.Sleep(wait) // the model's latency
		return llmtest.Reply("done")
	})
	var peak, submit, last float64
	for i := 0; i < b.N; i++ {
		prefix := fmt.Sprintf("d%d:", i)
		q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		home := b.TempDir()
		// ODEK_BENCH_SANDBOX=off measures the same jobs unconfined, the
		// sandbox's share of the figures.
		if os.Getenv("ODEK_BENCH_SANDBOX") == "off" {
			if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"sandbox":{"mode":"off"}}`), 0o600); err != nil {
				b.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, odekBin, "worker", "--concurrency", strconv.Itoa(jobs), "--name", "dense", "--prefix", prefix, "--log-level", "warn")
		cmd.Dir = home
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ODEK_HOME=" + home, "ODEK_BASE_URL=" + llm.URL,
			"ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef", "REDIS_URL=redis://" + srv.Addr}
		var se bintest.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if ws, _ := q.Workers(context.Background()); len(ws) == 1 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("worker did not register: %s", se.String())
			}
		}
		t0 := time.Now()
		for j := 0; j < jobs; j++ {
			if _, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: int64(j + 1), Goal: fmt.Sprintf("job %d", j)}); err != nil {
				b.Fatal(err)
			}
		}
		submitted := time.Since(t0)
		got := 0
		for deadline := time.Now().Add(2 * time.Minute); got < jobs; {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d results within 2 min: %s", got, jobs, se.String())
			}
			ds, err := q.ReadResults(context.Background(), "fe", 500, 100*time.Millisecond)
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range ds {
				if d.Result.Status != queue.StatusSucceeded {
					b.Fatalf("result %+v", d.Result)
				}
				got++
				_ = q.AckResult(context.Background(), d)
			}
		}
		lastAt := time.Since(t0)
		peak += hwmKiB(cmd.Process.Pid) / 1024
		submit += submitted.Seconds()
		last += lastAt.Seconds()
		cancel()
		_ = cmd.Wait()
	}
	n := float64(b.N)
	b.ReportMetric(peak/n, "peak-RSS-MiB")
	b.ReportMetric(submit/n, "submit-s")
	b.ReportMetric(last/n, "last-result-s")
	b.ReportMetric(last/n-submit/n-wait.Seconds(), "over-model+submit-s")
}

// hwmKiB is the process's peak resident set size (VmHWM).
func hwmKiB(pid int) float64 { return procStatusKiB(pid, "VmHWM") }
