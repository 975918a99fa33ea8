package queuetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// poisonGoal marks the job that kills whichever simulated worker runs it.
const poisonGoal = "poison: kills its worker"

// simFleet is a set of simulated worker processes over one queue. Each
// worker claims up to conc jobs at a time, heartbeats its leases and acks a
// healthy job after jobDur. A worker "dies" (as with SIGKILL) when it starts
// the poison job or when kill is called: every job it holds stops
// heartbeating and is never acknowledged; the worker comes back at once
// under a new consumer name, as a restarted process would.
type simFleet struct {
	t       *testing.T
	q       queue.Queue
	conc    int
	lease   time.Duration // the queue's LeaseTTL
	jobDur  time.Duration
	beat    time.Duration
	ctx     context.Context
	workers []*simWorker
	wg      sync.WaitGroup

	mu       sync.Mutex
	failures []string
	deaths   int
}

type simWorker struct {
	f   *simFleet
	idx int

	mu      sync.Mutex
	gen     int
	die     context.CancelFunc // kills the current incarnation
	running map[string]*held   // the jobs the current incarnation holds
}

// held is what a worker knows of one of its leases: the calls that granted
// or renewed it (Claim, then each Heartbeat), the last two that succeeded.
type held struct{ last, prev renewal }

// renewal is one call that granted or renewed a lease: the queue stamped
// the lease between start and end.
type renewal struct{ start, end time.Time }

// liveThrough reports whether the lease was certainly live from from (the
// start of a Claim) to to (its return): a renewal the queue had made by
// from (its call had returned) less than a lease before to. On a loaded
// machine a heartbeat can come later than the lease, and the queue may
// then rightly count the job as no longer held.
func (h *held) liveThrough(from, to time.Time, lease time.Duration) bool {
	for _, r := range []renewal{h.last, h.prev} {
		if !r.end.IsZero() && !r.end.After(from) {
			return to.Sub(r.start) < lease
		}
	}
	return false
}

func (f *simFleet) fail(format string, args ...any) {
	f.mu.Lock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *simFleet) start(n int) {
	for i := 0; i < n; i++ {
		w := &simWorker{f: f, idx: i}
		f.workers = append(f.workers, w)
		f.wg.Add(1)
		go func() { defer f.wg.Done(); w.loop() }()
	}
}

// kill kills worker i's current incarnation.
func (f *simFleet) kill(i int) {
	w := f.workers[i]
	w.mu.Lock()
	if w.die != nil {
		w.die()
	}
	w.mu.Unlock()
}

// loop runs incarnations until the fleet's context ends.
func (w *simWorker) loop() {
	for w.f.ctx.Err() == nil {
		ctx, die := context.WithCancel(w.f.ctx)
		w.mu.Lock()
		w.gen++
		name := fmt.Sprintf("sim%d.%d", w.idx, w.gen)
		w.die, w.running = die, map[string]*held{}
		w.mu.Unlock()
		w.incarnation(ctx, name)
		die()
		if w.f.ctx.Err() == nil {
			w.f.mu.Lock()
			w.f.deaths++
			w.f.mu.Unlock()
		}
	}
}

// incarnation claims and runs jobs until ctx ends (death or test end).
func (w *simWorker) incarnation(ctx context.Context, name string) {
	var jobs sync.WaitGroup
	defer jobs.Wait()
	slots := make(chan struct{}, w.f.conc)
	for ctx.Err() == nil {
		// Wait for at least one free slot, then take all free ones.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		free := 1
		for free < w.f.conc {
			select {
			case slots <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		claimed := time.Now()
		ls, err := w.f.q.Claim(ctx, name, free, 30*time.Millisecond)
		returned := time.Now()
		// Only this loop adds jobs, so what runs now ran during the whole
		// Claim, and the queue saw this worker hold every such lease that
		// was live throughout it. With timely heartbeats that is all of
		// them; one whose heartbeat came late (a stalled process) may have
		// expired, and a worker then holding nothing live may be given a
		// suspect.
		w.mu.Lock()
		busy := 0
		for _, h := range w.running {
			if h.liveThrough(claimed, returned, w.f.lease) {
				busy++
			}
		}
		w.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				w.f.fail("%s: Claim: %v", name, err)
			}
			return
		}
		for range free - len(ls) {
			<-slots
		}
		var suspectDone chan struct{}
		for _, l := range ls {
			// (A dead incarnation's jobs no longer count: their leases
			// expire, and what a dead worker claims is abandoned anyway.)
			if l.Suspect && (len(ls) > 1 || busy > 0) && ctx.Err() == nil {
				w.f.fail("%s: Claim handed out suspect %s (attempt %d) beside %d other leases and %d running jobs; a suspect must run alone",
					name, l.Job.ID, l.Job.Attempt, len(ls)-1, busy)
			}
			w.mu.Lock()
			w.running[l.Job.ID] = &held{last: renewal{claimed, returned}}
			w.mu.Unlock()
			done := make(chan struct{})
			if l.Suspect {
				suspectDone = done
			}
			jobs.Add(1)
			go func() {
				defer func() { <-slots; close(done); jobs.Done() }()
				w.run(ctx, l)
			}()
		}
		if suspectDone != nil { // claim nothing else until the suspect ends
			select {
			case <-suspectDone:
			case <-ctx.Done():
				return
			}
		}
	}
}

// run holds l until the job is done (ack), the worker dies, or the lease
// is lost.
func (w *simWorker) run(ctx context.Context, l queue.Lease) {
	if l.Job.Goal == poisonGoal {
		w.mu.Lock()
		w.die()
		w.mu.Unlock()
		return
	}
	tick := time.NewTicker(w.f.beat)
	defer tick.Stop()
	done := time.NewTimer(w.f.jobDur)
	defer done.Stop()
	for {
		select {
		case <-ctx.Done():
			return // died: no heartbeat, no ack
		case <-tick.C:
			beat := time.Now()
			err := w.f.q.Heartbeat(context.WithoutCancel(ctx), l)
			if err == nil {
				w.mu.Lock()
				if h := w.running[l.Job.ID]; h != nil {
					h.prev, h.last = h.last, renewal{beat, time.Now()}
				}
				w.mu.Unlock()
			}
			if errors.Is(err, queue.ErrLeaseLost) {
				// The queue took the job back (a heartbeat came late on a
				// loaded machine): this worker no longer holds it, and
				// must not count it as running when it claims next.
				w.mu.Lock()
				delete(w.running, l.Job.ID)
				w.mu.Unlock()
				return
			}
		case <-done.C:
			// No longer held once acked; forget it first, so that this
			// worker never counts itself idle while the queue sees it busy.
			w.mu.Lock()
			delete(w.running, l.Job.ID)
			w.mu.Unlock()
			err := w.f.q.Ack(context.WithoutCancel(ctx), l, queue.Result{Answer: "ok " + l.Job.ID})
			if err != nil && !errors.Is(err, queue.ErrLeaseLost) {
				w.f.fail("Ack %s: %v", l.Job.ID, err)
			}
			return
		}
	}
}

// testPoisonIsolation: one poison job (it kills every worker that runs it)
// and healthy jobs in other chats, several workers at concurrency > 1. Only
// the poison job may be dead-lettered: the healthy jobs that were running
// beside it when it killed their worker must not pay for its deaths. With
// kills, randomKills extra deaths of random workers are added; they are
// fewer than MaxAttempts, so no healthy job can reach it alone.
func testPoisonIsolation(t *testing.T, nq NewQueue, randomKills int) {
	const (
		healthy = 8
		workers = 3
		conc    = 4
		lease   = 250 * time.Millisecond
	)
	q := nq(t, queue.Options{LeaseTTL: lease, MaxAttempts: 3})
	ctx, stop := context.WithCancel(ctxT(t))
	defer stop()
	poison := enqueue(t, q, queue.Job{ChatID: 1000, Goal: poisonGoal})
	want := map[string]bool{}
	for i := 0; i < healthy; i++ {
		j := enqueue(t, q, queue.Job{ChatID: int64(1001 + i), Goal: fmt.Sprintf("healthy %d", i)})
		want[j.ID] = true
	}
	f := &simFleet{t: t, q: q, conc: conc, lease: lease, jobDur: 2 * lease, beat: lease / 5, ctx: ctx}
	f.start(workers)
	defer func() { stop(); f.wg.Wait() }()

	var killer sync.WaitGroup
	if randomKills > 0 {
		killer.Add(1)
		go func() {
			defer killer.Done()
			for i := 0; i < randomKills; i++ {
				if !sleepCtx(ctx, time.Duration(300+rand.IntN(400))*time.Millisecond) {
					return
				}
				f.kill(rand.IntN(workers))
			}
		}()
	}
	defer killer.Wait()

	results := map[string]queue.Result{}
	deadline := time.Now().Add(15 * time.Second)
	for len(results) < healthy+1 && time.Now().Before(deadline) {
		ds, err := q.ReadResults(ctxT(t), "fe", 20, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if prev, ok := results[d.Result.JobID]; ok {
				t.Errorf("second result for %s: %+v (first %+v)", d.Result.JobID, d.Result, prev)
			}
			results[d.Result.JobID] = d.Result
			if err := q.AckResult(ctxT(t), d); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop()
	f.wg.Wait()
	for _, msg := range f.failures {
		t.Error(msg)
	}
	var deadHealthy []string
	for id := range want {
		r, ok := results[id]
		switch {
		case !ok:
			t.Errorf("healthy job %s: no result within 15s", id)
		case r.Status == queue.StatusDeadLettered:
			deadHealthy = append(deadHealthy, fmt.Sprintf("%s (attempt %d)", id, r.Attempt))
		case r.Status != queue.StatusSucceeded:
			t.Errorf("healthy job %s: %+v, want succeeded", id, r)
		}
	}
	sort.Strings(deadHealthy)
	if len(deadHealthy) > 0 {
		t.Errorf("%d healthy jobs were dead-lettered with the poison job: %v", len(deadHealthy), deadHealthy)
	}
	if r, ok := results[poison.ID]; !ok || r.Status != queue.StatusDeadLettered {
		t.Errorf("poison job %s: result %+v (present %v), want dead_lettered", poison.ID, r, ok)
	}
	if op, ok := q.(queue.Operator); ok {
		dead, err := op.DeadLetters(ctxT(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range dead {
			ids = append(ids, j.ID)
		}
		if len(ids) != 1 || ids[0] != poison.ID {
			t.Errorf("dead letters %v, want only the poison job %s", ids, poison.ID)
		}
	}
	t.Logf("%d worker deaths (%d random kills)", f.deaths, randomKills)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
