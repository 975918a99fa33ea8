// Command embeddedbench measures odek-bot's queues end to end, side by side
// in one run: the embedded crash-safe store (queue/embedded, a bbolt file
// with fsync on every commit), the in-memory queue (queue.Memory) and the
// Redis queue (a redis-server started here, persistence off as in
// queuebench). One job is enqueue → claim → ack → ReadResults → RecordSent
// → AckResult, the whole path of a chat message through the bot and a
// worker: producers enqueue (each job its own chat) while conc consumers
// claim up to 16 and acknowledge each from its own goroutine, and one front
// end reads results, records each as sent (the bot's sent record of a
// one-chunk answer; -sent=false leaves it out) and acknowledges it, as the
// bot does. Rounds alternate; the best of
// each is reported.
//
//	cd bench/queuebench && go run ./embeddedbench -n 20000 -producers 16 -concurrency 4
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/redis/go-redis/v9"
)

// recordSent: the front end writes a sent record per answer (-sent).
var recordSent bool

// changesPerJob is the durable writes one job makes: enqueue, ack,
// AckResult, the claim's record, and the sent record with -sent.
func changesPerJob() int {
	if recordSent {
		return 5
	}
	return 4
}

// endToEnd is what the measurement needs of a queue.
type endToEnd interface {
	queue.Queue
}

func main() {
	n := flag.Int("n", 20000, "jobs per run")
	producers := flag.Int("producers", 16, "goroutines enqueueing at once")
	conc := flag.Int("concurrency", 4, "consumers claiming at once")
	rounds := flag.Int("rounds", 3, "runs of each, alternating; the best is reported")
	onlyEmbedded := flag.Bool("only-embedded", false, "measure the embedded store alone (with -cpuprofile)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the embedded runs to this file")
	flag.BoolVar(&recordSent, "sent", true, "the front end writes the sent record of each answer before AckResult, as odek-bot does")
	flag.Parse()
	if *onlyEmbedded {
		if err := embeddedOnly(*n, *producers, *conc, *rounds, *cpuprofile); err != nil {
			fmt.Fprintln(os.Stderr, "embeddedbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*n, *producers, *conc, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "embeddedbench:", err)
		os.Exit(1)
	}
}

func run(n, producers, conc, rounds int) error {
	addr, stop, err := startRedis()
	if err != nil {
		return err
	}
	defer stop()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	defer c.Close()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "embeddedbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var best [3]float64
	var commits uint64
	for r := 0; r < rounds; r++ {
		path := filepath.Join(dir, fmt.Sprintf("store-%d.db", r))
		st, err := embedded.Open(path, queue.Options{})
		if err != nil {
			return err
		}
		e := throughput(st, n, producers, conc)
		commits = st.Commits()
		if err := st.Close(); err != nil {
			return err
		}
		m := throughput(queue.NewMemory(queue.Options{}), n, producers, conc)
		c.FlushAll(ctx)
		rq, err := queue.NewRedis(ctx, c, queue.Options{})
		if err != nil {
			return err
		}
		rd := throughput(rq, n, producers, conc)
		fmt.Printf("round %d: embedded %.0f jobs/s (%d commits, %.1f changes per fsync), memory %.0f jobs/s, redis %.0f jobs/s\n",
			r+1, e, commits, float64(changesPerJob()*n)/float64(max(commits, 1)), m, rd)
		best[0], best[1], best[2] = max(best[0], e), max(best[1], m), max(best[2], rd)
	}
	fmt.Printf("\n| queue | end-to-end throughput (best of %d, %d jobs, %d producers, concurrency %d) |\n", rounds, n, producers, conc)
	fmt.Println("| --- | --- |")
	fmt.Printf("| embedded store (bbolt, fsync per commit) | %.0f jobs/s |\n", best[0])
	fmt.Printf("| in-memory (queue.Memory, nothing kept) | %.0f jobs/s |\n", best[1])
	fmt.Printf("| Redis (one node, persistence off) | %.0f jobs/s |\n", best[2])
	return nil
}

// embeddedOnly measures the embedded store alone, optionally profiled.
func embeddedOnly(n, producers, conc, rounds int, profile string) error {
	dir, err := os.MkdirTemp("", "embeddedbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for r := 0; r < rounds; r++ {
		st, err := embedded.Open(filepath.Join(dir, fmt.Sprintf("store-%d.db", r)), queue.Options{})
		if err != nil {
			return err
		}
		e := throughput(st, n, producers, conc)
		fmt.Printf("round %d: embedded %.0f jobs/s (%d commits)\n", r+1, e, st.Commits())
		if err := st.Close(); err != nil {
			return err
		}
	}
	return nil
}

// throughput pushes n no-op jobs through the whole path and returns jobs/s.
func throughput(q endToEnd, n, producers, conc int) float64 {
	ctx := context.Background()
	var next, acked, delivered atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: i, Goal: "noop", IdempotencyKey: "u" + strconv.FormatInt(i, 10)}); err != nil {
					panic(err)
				}
			}
		})
	}
	for w := range conc {
		wg.Go(func() {
			name := "c" + strconv.Itoa(w)
			for acked.Load() < int64(n) {
				ls, err := q.Claim(ctx, name, 16, 20*time.Millisecond)
				if err != nil {
					panic(err)
				}
				var aw sync.WaitGroup
				for _, l := range ls {
					aw.Go(func() {
						if err := q.Ack(ctx, l, queue.Result{Answer: "ok"}); err != nil {
							panic(err)
						}
						acked.Add(1)
					})
				}
				aw.Wait()
			}
		})
	}
	wg.Go(func() { // the front end
		for delivered.Load() < int64(n) {
			ds, err := q.ReadResults(ctx, "bot", 64, 20*time.Millisecond)
			if err != nil {
				panic(err)
			}
			var aw sync.WaitGroup
			for _, d := range ds {
				aw.Go(func() {
					// The bot records the accepted answer (a one-chunk
					// answer: one step) before it acknowledges it.
					if rec, ok := q.(queue.SentRecorder); ok && recordSent {
						if err := rec.RecordSent(ctx, d, queue.Sent{Steps: 1, MessageIDs: []int{1}}); err != nil {
							panic(err)
						}
					}
					if err := q.AckResult(ctx, d); err != nil {
						panic(err)
					}
					delivered.Add(1)
				})
			}
			aw.Wait()
		}
	})
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

func startRedis() (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "embeddedbench-redis")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server: %w", err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
		}
	}
	return addr, func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }, nil
}
