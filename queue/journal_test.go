package queue_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// mapJournal keeps a Memory's records in maps, committed when the test
// says (commit), so a test can see what a crash at any point would keep.
type mapJournal struct {
	mem *queue.Memory

	cmu       sync.Mutex // one commit at a time, in order
	mu        sync.Mutex // guards committed and the maps
	pending   []queue.Change
	gen       uint64
	committed uint64
	ch        chan struct{}
	kick      chan struct{} // a record is pending (autoCommit)
	jobs      map[string]queue.JobRecord
	done      map[string]queue.JobRecord
	results   map[uint64]string
	idem      map[string]queue.IdemRecord
	dead      map[uint64]queue.DeadLetter
}

func newMapJournal() *mapJournal {
	return &mapJournal{gen: 1, ch: make(chan struct{}), kick: make(chan struct{}, 1), jobs: map[string]queue.JobRecord{}, done: map[string]queue.JobRecord{},
		results: map[uint64]string{}, idem: map[string]queue.IdemRecord{}, dead: map[uint64]queue.DeadLetter{}}
}

func (j *mapJournal) Record(c queue.Change) {
	j.pending = append(j.pending, c)
	select {
	case j.kick <- struct{}{}:
	default:
	}
}
func (j *mapJournal) Mark() uint64 {
	if len(j.pending) > 0 {
		return j.gen
	}
	return j.gen - 1
}
func (j *mapJournal) Durable() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.committed
}
func (j *mapJournal) Err() error { return nil }
func (j *mapJournal) Wait(g uint64) error {
	for {
		j.mu.Lock()
		ok, ch := j.committed >= g, j.ch
		j.mu.Unlock()
		if ok {
			return nil
		}
		<-ch
	}
}
func (j *mapJournal) Finished(id string) (queue.JobRecord, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.done[id]
	return r, ok
}

// commit applies the pending records, as a journal's committer does.
func (j *mapJournal) commit() {
	j.cmu.Lock()
	defer j.cmu.Unlock()
	var cs []queue.Change
	var g uint64
	j.mem.WithLock(func() { cs, g = j.pending, j.gen; j.pending = nil; j.gen++ })
	j.mu.Lock()
	for _, c := range cs {
		switch c.Kind {
		case queue.ChangeJob:
			if c.Job.State == queue.StateDone {
				delete(j.jobs, c.Job.Job.ID)
				j.done[c.Job.Job.ID] = *c.Job
			} else {
				j.jobs[c.Job.Job.ID] = *c.Job
			}
		case queue.ChangeResult:
			j.results[c.Key] = c.JobID
		case queue.ChangeResultGone:
			delete(j.results, c.Key)
		case queue.ChangeIdem:
			j.idem[c.IdemKey] = queue.IdemRecord{Key: c.IdemKey, JobID: c.JobID, Expires: c.Expires}
		case queue.ChangeIdemGone:
			delete(j.idem, c.IdemKey)
		case queue.ChangeDead:
			j.dead[c.Key] = *c.Dead
		case queue.ChangeDeadGone:
			delete(j.dead, c.Key)
		}
	}
	j.committed = g
	close(j.ch)
	j.ch = make(chan struct{})
	j.mu.Unlock()
	j.mem.Wake()
}

// autoCommit commits whenever a record is pending, as a journal's
// committer does, until the test ends.
func (j *mapJournal) autoCommit(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-j.kick:
				j.commit()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// snapshot is what a crash now would leave.
func (j *mapJournal) snapshot() queue.Snapshot {
	j.mu.Lock()
	defer j.mu.Unlock()
	var s queue.Snapshot
	for _, r := range j.jobs {
		s.Jobs = append(s.Jobs, r)
	}
	for k, id := range j.results {
		s.Results = append(s.Results, queue.ResultRecord{Key: k, Job: j.done[id]})
	}
	for _, e := range j.idem {
		s.Idem = append(s.Idem, e)
	}
	for k, d := range j.dead {
		s.Dead = append(s.Dead, queue.DeadLetterItem{Key: k, Dead: d})
	}
	return s
}

func TestJournaledMemoryConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T, o queue.Options) queue.Queue {
		j := newMapJournal()
		j.mem = queue.NewJournaledMemory(o, j)
		j.autoCommit(t)
		return j.mem
	})
}

// TestJournalHoldsBackUndurableResults: an acknowledged result is not
// handed to ReadResults until the journal has committed it, and Ack
// returns only then.
func TestJournalHoldsBackUndurableResults(t *testing.T) {
	ctx := context.Background()
	j := newMapJournal()
	m := queue.NewJournaledMemory(queue.Options{}, j)
	j.mem = m
	enq := make(chan error, 1)
	go func() { _, _, err := m.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "g"}); enq <- err }()
	waitStats(t, m, func(st queue.Stats) bool { return st.Queued == 1 })
	j.commit()
	if err := <-enq; err != nil {
		t.Fatal(err)
	}
	ls, err := m.Claim(ctx, "w", 1, 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Claim = %d %v", len(ls), err)
	}
	acked := make(chan error, 1)
	go func() { acked <- m.Ack(ctx, ls[0], queue.Result{Answer: "a"}) }()
	waitStats(t, m, func(st queue.Stats) bool { return st.Results == 1 }) // in the queue, not yet committed
	if ds, err := m.ReadResults(ctx, "bot", 5, 0); err != nil || len(ds) != 0 {
		t.Fatalf("ReadResults before the commit = %d %v; want none (a crash could take it back)", len(ds), err)
	}
	j.commit()
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if ds, err := m.ReadResults(ctx, "bot", 5, 0); err != nil || len(ds) != 1 || ds[0].Result.Answer != "a" {
		t.Fatalf("ReadResults after the commit = %+v %v", ds, err)
	}
}

// waitStats polls until ok holds (another goroutine's step has happened).
func waitStats(t *testing.T, m *queue.Memory, ok func(queue.Stats) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if st, err := m.Stats(context.Background()); err == nil && ok(st) {
			return
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	t.Fatal("the queue never reached the expected state")
}

// TestRestoreMemoryFromJournal: what the journal committed rebuilds the
// queue after a crash: per-chat order, the running job reclaimed as a
// suspect, the unacknowledged result handed out again, the idempotency key
// and a finished job's result still known.
func TestRestoreMemoryFromJournal(t *testing.T) {
	ctx := context.Background()
	j := newMapJournal()
	j.mem = queue.NewJournaledMemory(queue.Options{}, j)
	j.autoCommit(t)
	m := j.mem
	var ids []string
	for i, chat := range []int64{1, 2, 1, 2} {
		jb, _, err := m.Enqueue(ctx, queue.Job{ChatID: chat, Goal: "g", IdempotencyKey: "k" + string(rune('a'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, jb.ID)
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("journaled job ids %v are not in time order", ids)
	}
	ls, err := m.Claim(ctx, "w", 2, 0)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %d %v", len(ls), err)
	}
	var running queue.Lease
	for _, l := range ls {
		if l.Job.ChatID == 1 {
			if err := m.Ack(ctx, l, queue.Result{Answer: "one"}); err != nil {
				t.Fatal(err)
			}
		} else {
			running = l
		}
	}
	j.commit() // the lease records (not waited for by Claim)

	// The crash: a new Memory from what was committed.
	j2 := newMapJournal()
	snap := j.snapshot()
	for id, r := range j.done {
		j2.done[id] = r
	}
	m2 := queue.RestoreMemory(queue.Options{}, j2, snap)
	j2.mem = m2
	j2.commit()
	ds, err := m2.ReadResults(ctx, "bot", 5, 0)
	if err != nil || len(ds) != 1 || ds[0].Result.Answer != "one" {
		t.Fatalf("results after restore = %+v %v; want chat 1's unacknowledged answer", ds, err)
	}
	if jb, dup, err := m2.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "again", IdempotencyKey: "ka"}); err != nil || !dup || jb.ID != ids[0] {
		t.Fatalf("idempotent enqueue after restore = %s %v %v; want %s, a duplicate", jb.ID, dup, err, ids[0])
	}
	if res, ok, err := m2.JobResult(ctx, ids[0]); err != nil || !ok || res.Answer != "one" {
		t.Fatalf("JobResult of a job finished before the crash = %+v %v %v", res, ok, err)
	}
	info, ok, err := m2.Inspect(ctx, running.Job.ID)
	if err != nil || !ok || info.State != queue.StateSuspect || info.Attempt != 1 {
		t.Fatalf("the job running at the crash: %+v %v %v; want a suspect after attempt 1", info, ok, err)
	}
	// The suspect runs alone first, then each chat's next job in order.
	next, err := m2.Claim(ctx, "w2", 4, 0)
	if err != nil || len(next) != 1 || !next[0].Suspect || next[0].Job.ID != running.Job.ID {
		t.Fatalf("first claim after restore = %+v %v; want the suspect alone", next, err)
	}
}
