package queue_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// The conformance suite runs unchanged on one node, behind Sentinel and on
// a 3+3 cluster, each reached through the URL form odek's commands use.
func TestRedisConformance(t *testing.T) {
	t.Parallel() // every topology is started for this test alone
	queuetest.EachTopology(t, func(t *testing.T, tp *queuetest.Topology) {
		c := tp.Client()
		checkDescribe(t, tp, c)
		var n atomic.Int64
		queuetest.Run(t, func(t *testing.T, o queue.Options) queue.Queue {
			// A fresh prefix per subtest keeps them apart on one server;
			// the subtests run in parallel, hence the atomic counter.
			o.Prefix = "t" + strconv.FormatInt(n.Add(1), 10) + ":"
			q, err := queue.NewRedis(context.Background(), c, o)
			if err != nil {
				t.Fatal(err)
			}
			return q
		})
	})
}

// A Redis restart with AOF on loses no job: queued ones are claimed after
// it, the one running at the crash is reclaimed after its lease.
func TestRedisRestartWithAOFLosesNoJob(t *testing.T) {
	srv := queuetest.StartServer(t, queuetest.ServerOptions{AOF: true})
	c := srv.Client()
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{LeaseTTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := 1; i <= 3; i++ {
		j, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i), Goal: "survive"})
		if err != nil {
			t.Fatal(err)
		}
		want[j.ID] = true
	}
	if ls, err := q.Claim(ctx, "crashed", 1, time.Second); err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %d, %v", len(ls), err)
	}
	srv.Restart()
	got := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		ls, err := q.Claim(ctx, "survivor", 10, 50*time.Millisecond)
		if err != nil {
			continue // the pool reconnects after the restart
		}
		for _, l := range ls {
			if got[l.Job.ID] {
				t.Fatalf("job %s handed out twice", l.Job.ID)
			}
			got[l.Job.ID] = true
			if err := q.Ack(ctx, l, queue.Result{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id := range want {
		if !got[id] {
			t.Errorf("job %s lost across the restart", id)
		}
	}
}

// A Redis that lost its data (no persistence) gets its consumer groups back
// on the next Claim instead of failing with NOGROUP forever.
func TestRedisRecreatesGroupsAfterDataLoss(t *testing.T) {
	srv := queuetest.StartServer(t, queuetest.ServerOptions{})
	c := srv.Client()
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err = q.Claim(ctx, "w", 1, 0); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("Claim after data loss: %v", err)
	}
	j, _, err := q.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "after"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, "w", 1, time.Second)
	if err != nil || len(ls) != 1 || ls[0].Job.ID != j.ID {
		t.Fatalf("Claim = %+v, %v; want %s", ls, err, j.ID)
	}
	if _, err := q.ReadResults(ctx, "fe", 1, 0); err != nil {
		t.Fatalf("ReadResults after data loss: %v", err)
	}
}

// An Ack that reports an error must not have finished the job (a worker
// would otherwise count a published result as lost, and retry it); with a
// context that is already canceled, Ack fails and leaves the job running,
// every time.
func TestRedisAckErrorMeansNotApplied(t *testing.T) {
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{Prefix: "ackerr:"})
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for i := 1; i <= 20; i++ {
		if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i), Goal: "g"}); err != nil {
			t.Fatal(err)
		}
		ls, err := q.Claim(ctx, "w", 1, time.Second)
		if err != nil || len(ls) != 1 {
			t.Fatalf("Claim = %v, %v", ls, err)
		}
		ackErr := q.Ack(canceled, ls[0], queue.Result{Answer: "a"})
		_, done, err := q.JobResult(ctx, ls[0].Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ackErr != nil && done {
			t.Fatalf("job %d: Ack = %v but the job was finished", i, ackErr)
		}
		if ackErr == nil && !done {
			t.Fatalf("job %d: Ack = nil but the job is not finished", i)
		}
	}
}

// gatePipelines holds every pipeline while armed until the test lets it go.
type gatePipelines struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatePipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g *gatePipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g *gatePipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if g.armed.Load() {
			g.entered <- struct{}{}
			<-g.release
		}
		return next(ctx, cmds)
	}
}

// The caller whose turn it was to send the shared pipeline gets its reply
// as soon as its own batch is back: it does not go on carrying the calls
// that queued up meanwhile (under steady load it would never return).
func TestRedisSharedRoundTripReturnsLeaderEarly(t *testing.T) {
	base := queuetest.StartRedis(t)
	g := &gatePipelines{entered: make(chan struct{}), release: make(chan struct{})}
	c := redis.NewClient(&redis.Options{Addr: base.Options().Addr})
	defer c.Close()
	c.AddHook(g)
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{Prefix: "lead:"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "load the script"}); err != nil {
		t.Fatal(err)
	}
	g.armed.Store(true)
	first := make(chan error, 1)
	go func() { _, _, err := q.Enqueue(ctx, queue.Job{ChatID: 2, Goal: "first"}); first <- err }()
	<-g.entered // the first call's pipeline is on its way
	second := make(chan error, 1)
	go func() { _, _, err := q.Enqueue(ctx, queue.Job{ChatID: 3, Goal: "second"}); second <- err }()
	// Wait until the second call is queued behind the first batch.
	deadline := time.Now().Add(5 * time.Second)
	for q.WaitingScripts() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	g.release <- struct{}{} // the first batch completes
	select {
	case <-g.entered: // the second batch is held
	case <-time.After(10 * time.Second):
		t.Fatal("the second call was never sent")
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first Enqueue did not return while the next batch was in flight")
	}
	g.armed.Store(false)
	g.release <- struct{}{}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}

// A start call resent after its reply was lost (go-redis retries a command
// whose connection broke; a Redis restart does that) must hand out the same
// lease, not settle the entry: settled, the job stayed "running" with no
// pending entry, never reclaimed, and its chat's later jobs waited forever.
func TestRedisStartResentAfterLostReply(t *testing.T) {
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{Prefix: "resent:"})
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := q.Enqueue(ctx, queue.Job{ChatID: 2, Goal: "first of the chat"})
	if err != nil {
		t.Fatal(err)
	}
	streams, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: q.Options().Group, Consumer: "w1",
		Streams: []string{"{resent}:jobs", ">"}, Count: 1}).Result()
	if err != nil || len(streams) != 1 || len(streams[0].Messages) != 1 {
		t.Fatalf("read: %v %v", streams, err)
	}
	eid := streams[0].Messages[0].ID
	first, err := q.StartWith(ctx, "w1", "tok-1", eid, j.ID)
	if err != nil || len(first) != 1 {
		t.Fatalf("first start: %v %v", first, err)
	}
	again, err := q.StartWith(ctx, "w1", "tok-1", eid, j.ID)
	if err != nil || len(again) != 1 || again[0].Job.ID != j.ID || again[0].Job.Attempt != first[0].Job.Attempt {
		t.Fatalf("resent start: %+v %v, want the same lease as %+v", again, err, first)
	}
	pend, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "{resent}:jobs", Group: q.Options().Group, Start: "-", End: "+", Count: 10}).Result()
	if err != nil || len(pend) != 1 || pend[0].ID != eid {
		t.Fatalf("the entry must stay pending for the reclaim scan: %+v %v", pend, err)
	}
	if err := q.Ack(ctx, again[0], queue.Result{Status: queue.StatusSucceeded}); err != nil {
		t.Fatalf("ack with the resent lease: %v", err)
	}
	// A stale entry (another token) is still settled as before.
	if l, err := q.StartWith(ctx, "w1", "tok-2", eid, j.ID); err != nil || len(l) != 0 {
		t.Fatalf("stale start: %v %v", l, err)
	}
}

// An enqueue resent after a lost reply reports success, not "exists".
func TestRedisEnqueueResentAfterLostReply(t *testing.T) {
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{Prefix: "resent:"})
	if err != nil {
		t.Fatal(err)
	}
	job := queue.Job{ID: "job-1", ChatID: 2, Goal: "g", CreatedAt: time.Unix(1700000000, 0).UTC()}
	for i := range 2 {
		if _, dup, err := q.Enqueue(ctx, job); err != nil || dup {
			t.Fatalf("enqueue %d: dup=%v err=%v", i, dup, err)
		}
	}
	job.Goal = "another goal under the same id"
	if _, _, err := q.Enqueue(ctx, job); err == nil {
		t.Fatal("a different job under a taken id was accepted")
	}
}

// checkDescribe: DescribeRedis names the mode, the master of the queue's
// slot (as the topology itself says) and its replica.
func checkDescribe(t *testing.T, tp *queuetest.Topology, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	key := queue.KeyPrefix("") + "jobs"
	ti, err := queue.DescribeRedis(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tp.Master(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wantReplicas, wantMasters := 1, 1
	switch tp.Mode {
	case queue.ModeSingle:
		wantReplicas = 0
	case queue.ModeCluster:
		wantMasters = 3
	}
	if ti.Mode != tp.Mode || ti.Master != m.Addr || ti.MasterID == "" || len(ti.Replicas) != wantReplicas || ti.Masters != wantMasters {
		t.Errorf("DescribeRedis = %+v; want mode %s, master %s, %d replicas, %d masters", ti, tp.Mode, m.Addr, wantReplicas, wantMasters)
	}
	w := queue.NewTopologyWatcher(c, key)
	w.Check(ctx)
	w.Check(ctx)
	if _, n, err := w.Snapshot(); n != 0 || err != nil {
		t.Errorf("watcher without a failover: %d changes, %v", n, err)
	}
}

// TestRedisScriptsReloadedForEveryCallOfABatch: after Redis lost its
// scripts (restart, SCRIPT FLUSH), every call of a shared round trip that
// met NOSCRIPT is sent again once the script is loaded, not only the first
// call of each script (which a version of the coalescer did: the second
// Ack of a batch failed with NOSCRIPT).
func TestRedisScriptsReloadedForEveryCallOfABatch(t *testing.T) {
	c := queuetest.StartRedis(t)
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i + 1), Goal: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := q.Claim(ctx, "w", 3, time.Second)
	if err != nil || len(ls) != 3 {
		t.Fatalf("claim: %d leases, %v", len(ls), err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, err := range q.HeartbeatBatch(ctx, ls) {
		if err != nil {
			t.Errorf("heartbeat %d of one batch after SCRIPT FLUSH: %v", i, err)
		}
	}
}
