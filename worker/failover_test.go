package worker_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/odekrun/odek/worker"
	"github.com/redis/go-redis/v9"
)

// TestFailoverUnderLoad: 200 jobs across 20 chats run through 3 workers
// (each with its own client, as separate processes would) while the
// master holding the queue is SIGKILLed. Nothing is lost, every job gets
// exactly one reply, no job is dead-lettered, and each chat's jobs start in
// order. The time from the kill to the first successful claim afterwards
// is logged. It runs with the soak tag only (failover_soak_test.go, the
// soak step of .ci/run), behind Sentinel and the 3+3 cluster, beside manual
// failovers and five kills per mode for the recovery figures. The queues
// wait for the replica on their writes (auto: the master has one), which
// is what keeps a job the killed master acknowledged.
func TestFailoverUnderLoad(t *testing.T) {
	if !soak {
		// Two topologies and 200 jobs take about a minute of a 2-core
		// machine: it runs in .ci/run's soak step. Before the queue waited
		// for a replica (docs/QUEUE.md "Durability through failover"), a
		// job the killed master had acknowledged was lost once here (1 of
		// 200, load ~25); with the wait the test stays strict and passes.
		t.Skip("failover under load runs with -tags soak (.ci/run's soak step)")
	}
	modes := []string{queue.ModeSentinel, queue.ModeCluster}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := runFailover(t, mode, failoverKill)
			t.Logf("%s: kill → first claim after it %v; failover seen by the test after %v; all %d replies in %v",
				mode, r.recovery.Round(time.Millisecond), r.failover.Round(time.Millisecond), r.jobs, r.total.Round(time.Millisecond))
		})
	}
}

const (
	failoverKill   = "kill"
	failoverManual = "manual"
)

type failoverRun struct {
	jobs                      int
	recovery, failover, total time.Duration
}

// timedQueue records the first successful, non-empty claim after the
// kill; the embedded *queue.Redis keeps every optional interface.
type timedQueue struct {
	*queue.Redis
	killedAt   *atomic.Int64 // unix ns; 0 before the kill
	firstClaim *atomic.Int64 // unix ns of the first claim after it
}

func (q timedQueue) Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Lease, error) {
	called := time.Now().UnixNano()
	ls, err := q.Redis.Claim(ctx, consumer, max, block)
	if err == nil && len(ls) > 0 {
		if k := q.killedAt.Load(); k != 0 && called > k { // a call begun after the master was gone
			q.firstClaim.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
	return ls, err
}

func runFailover(t *testing.T, mode, how string) failoverRun {
	const jobs, chats, workers = 200, 20, 3
	t0 := time.Now()
	tp := queuetest.StartTopology(t, mode)
	t.Logf("%s topology up in %v", mode, time.Since(t0).Round(time.Millisecond))
	ctx := context.Background()
	opts := queue.Options{LeaseTTL: 10 * time.Second, ResultLeaseTTL: 2 * time.Second}
	var killedAt, firstClaim atomic.Int64

	var mu sync.Mutex
	starts := map[int64][]int{} // chat → seq of every run start, in order
	replies := map[string]int{}
	var dead atomic.Int64
	run := func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), _ agent.Prompter) (queue.Result, error) {
		seq, _ := strconv.Atoi(strings.TrimPrefix(job.Goal, "seq "))
		mu.Lock()
		starts[job.ChatID] = append(starts[job.ChatID], seq)
		mu.Unlock()
		select {
		case <-time.After(15 * time.Millisecond): // the job's work
		case <-ctx.Done():
			return queue.Result{}, ctx.Err()
		}
		return queue.Result{Status: queue.StatusSucceeded, Answer: job.Goal}, nil
	}
	for i := range workers {
		c := tp.Client()
		q, err := queue.NewRedis(ctx, c, opts)
		if err != nil {
			t.Fatal(err)
		}
		start(t, worker.Config{Queue: timedQueue{q, &killedAt, &firstClaim}, Run: run, Name: fmt.Sprintf("w%d", i),
			Concurrency: 4, LeaseTTL: opts.LeaseTTL, HeartbeatInterval: 200 * time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 500 * time.Millisecond})
	}
	// The front end: reads results, "sends" each reply once, acknowledges.
	fc := tp.Client()
	fq, err := queue.NewRedis(ctx, fc, opts)
	if err != nil {
		t.Fatal(err)
	}
	feCtx, stopFE := context.WithCancel(ctx)
	defer stopFE()
	var feDone sync.WaitGroup
	feDone.Add(1)
	go func() {
		defer feDone.Done()
		for feCtx.Err() == nil {
			ds, err := fq.ReadResults(feCtx, "bot", 50, 200*time.Millisecond)
			if err != nil {
				time.Sleep(50 * time.Millisecond) // backoff while Redis fails over
				continue
			}
			for _, d := range ds {
				mu.Lock()
				replies[d.Result.JobID]++
				mu.Unlock()
				if d.Result.Status == queue.StatusDeadLettered {
					dead.Add(1)
				}
				for fq.AckResult(feCtx, d) != nil && feCtx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}
	}()

	// The producer: 200 jobs, each enqueued until Redis says yes (the
	// idempotency key makes a retry the same job).
	began := time.Now()
	ids := make([]string, 0, jobs)
	pc := tp.Client()
	pq, err := queue.NewRedis(ctx, pc, opts)
	if err != nil {
		t.Fatal(err)
	}
	master, err := tp.Master(ctx, queue.KeyPrefix("")+"jobs")
	if err != nil {
		t.Fatal(err)
	}
	var failoverAt time.Duration
	for i := range jobs {
		if i == jobs/3 {
			switch how {
			case failoverKill:
				master.Kill() // returns once the process is gone
				killedAt.Store(time.Now().UnixNano())
			case failoverManual:
				manualFailover(t, tp, master)
				killedAt.Store(time.Now().UnixNano())
			}
			go func() {
				if _, err := tp.WaitFailover(ctx, master, queue.KeyPrefix("")+"jobs", 30*time.Second); err == nil {
					mu.Lock()
					failoverAt = time.Since(time.Unix(0, killedAt.Load()))
					mu.Unlock()
				}
			}()
		}
		job := queue.Job{ChatID: int64(1 + i%chats), Goal: "seq " + strconv.Itoa(i), IdempotencyKey: "k" + strconv.Itoa(i)}
		deadline := time.Now().Add(30 * time.Second)
		for {
			j, _, err := pq.Enqueue(ctx, job)
			if err == nil {
				ids = append(ids, j.ID)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("enqueue %d: Redis did not come back: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond) // the producer's backoff
		}
	}
	// Wait for every reply (or 60 s).
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(replies)
		mu.Unlock()
		if n >= jobs || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	total := time.Since(began)
	// Let a duplicate, if any, arrive: results are read for one more
	// result lease.
	time.Sleep(opts.ResultLeaseTTL + 500*time.Millisecond)
	stopFE()
	feDone.Wait()

	mu.Lock()
	defer mu.Unlock()
	var lost, dup []string
	for _, id := range ids {
		switch replies[id] {
		case 0:
			lost = append(lost, id)
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	if len(lost) > 0 || len(dup) > 0 || dead.Load() > 0 || len(ids) != jobs {
		t.Errorf("%d jobs enqueued: %d lost %v, %d replied more than once %v, %d dead-lettered", len(ids), len(lost), head(lost), len(dup), head(dup), dead.Load())
	}
	for chat, seqs := range starts {
		if !sort.IntsAreSorted(seqs) {
			t.Errorf("chat %d ran out of order: %v", chat, seqs)
		}
	}
	rec := time.Duration(firstClaim.Load() - killedAt.Load())
	if firstClaim.Load() == 0 {
		t.Errorf("no claim after the failover")
	}
	return failoverRun{jobs: len(ids), recovery: rec, failover: failoverAt, total: total}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// manualFailover asks for a failover of master without killing it.
func manualFailover(t *testing.T, tp *queuetest.Topology, master *queuetest.Server) {
	ctx := context.Background()
	switch tp.Mode {
	case queue.ModeSentinel:
		// SENTINEL FAILOVER promotes the replica first and demotes the old
		// master later: writes the old master takes meanwhile are lost
		// (without the pause this test saw 35 of 200 replies twice). The
		// procedure docs/DEPLOY.md gives pauses writes on the old master
		// first, as CLUSTER FAILOVER does by itself.
		mc := redis.NewClient(&redis.Options{Addr: master.Addr})
		defer mc.Close()
		if err := mc.Do(ctx, "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
			t.Fatalf("CLIENT PAUSE: %v", err)
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: tp.Sentinels[0].Addr})
		defer c.Close()
		if err := c.Failover(ctx, tp.MasterName).Err(); err != nil {
			t.Fatalf("SENTINEL FAILOVER: %v", err)
		}
	case queue.ModeCluster:
		for _, n := range tp.Nodes {
			if n == master {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: n.Addr})
			info, _ := c.Info(ctx, "replication").Result()
			if strings.Contains(info, "master_port:"+master.Addr[strings.LastIndexByte(master.Addr, ':')+1:]+"\r\n") {
				err := c.ClusterFailover(ctx).Err()
				c.Close()
				if err != nil {
					t.Fatalf("CLUSTER FAILOVER: %v", err)
				}
				return
			}
			c.Close()
		}
		t.Fatal("no replica of the queue's master")
	}
}
