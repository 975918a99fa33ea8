// Package embedded is odek-bot's crash-safe store for embedded mode (no
// REDIS_URL): one bbolt file under ODEK_HOME that holds the job queue
// (jobs, leases' attempts and strikes, results not yet delivered, dead
// letters, idempotency keys) and small key-value buckets for the bot's chat
// state and status ledger.
//
// A Store implements queue.Queue, queue.Operator, queue.Inspector,
// queue.Approvals and the queue's other optional interfaces with the same
// behaviour as queue.Redis; queuetest.Run is its conformance suite.
//
// Design: the queue's state machine runs in memory under one mutex (as
// queue.Memory's does); every change that must survive a crash is also
// recorded as a pending write. One committer goroutine moves all pending
// writes into one bbolt transaction, which bbolt makes durable (fsync)
// before it returns; writers that arrive during a commit share the next one
// (group commit). Enqueue, Ack, Cancel, Retry, PurgeDead and AckResult
// return only after their change is durable, and ReadResults
// hands out only results that are durable, so nothing a user or a worker
// was told can be lost by a crash. Progress entries, approval questions and
// the worker registry are in memory only: they describe a running process
// and die with it.
//
// At Open, jobs that were running when the previous process died are
// reclaimed as if their leases had expired (a strike if they ran alone, a
// suspect to be retried alone, dead-lettered after MaxAttempts), results
// not yet acknowledged are handed out again, and the queued jobs resume in
// per-chat order.
//
// Ownership: Open takes an exclusive flock on <path>.lock (the holder's pid
// is written in it); a second Open, from any process, fails with a
// *LockedError naming that pid. Close releases it. Safe for concurrent use.
package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/odekrun/odek/queue"
)

type jobState int

const (
	stateQueued  jobState = iota // waiting behind an earlier job of its chat
	stateReady                   // head of its chat, not claimed
	stateRunning                 // claimed, lease held
	stateSuspect                 // its worker died; waits for an idle consumer
	stateDone                    // result published
)

var stateNames = [...]string{queue.StateQueued, queue.StateReady, queue.StateRunning, queue.StateSuspect, queue.StateDone}

type job struct {
	job      queue.Job
	enq      uint64 // enqueue order (chat order on reload)
	state    jobState
	seq      uint64 // sequence of the current ready/running spell
	attempt  int
	strikes  int
	alone    bool
	consumer string
	since    time.Time
	history  []queue.AttemptEnd
	beat     time.Time
	canceled bool
	doneAt   time.Time
	result   queue.Result
}

func (j *job) rec() jobRec {
	r := jobRec{Job: j.job, Seq: j.enq, State: stateNames[j.state], Attempt: j.attempt, Strikes: j.strikes,
		Alone: j.alone, Consumer: j.consumer, Since: j.since, History: j.history, Canceled: j.canceled, DoneAt: j.doneAt}
	r.Job.Attempt = 0
	if j.state == stateDone {
		res := j.result
		r.Result = &res
	}
	return r
}

type idem struct {
	id      string
	expires time.Time
}

type result struct {
	seq      uint64
	id       string
	at       time.Time
	res      queue.Result
	readAt   time.Time
	read     bool
	acked    bool
	gen      uint64 // commit that made it durable
	consumer string
}

type deadRec struct {
	key uint64
	dl  queue.DeadLetter
}

type progress struct {
	next    uint64
	entries []queue.Progress
	doneAt  time.Time
}

type approval struct {
	a       queue.Approval
	read    bool
	answer  chan bool
	settled bool
}

type worker struct {
	info    queue.WorkerInfo
	expires time.Time
}

// Store is the embedded store. Open it once per process; Close it.
type Store struct {
	o    queue.Options
	path string
	db   *bolt.DB
	lock *os.File

	mu        sync.Mutex
	wake      chan struct{} // closed and replaced on every change
	seq       uint64
	jobs      map[string]*job
	steer     map[string][]string // job id -> steer inbox, in memory only (steer.go)
	chats     map[string][]string // by queue.LaneKey
	ready     []string
	idem      map[string]idem
	dead      []deadRec
	workers   map[string]worker
	results   []*result
	delivered map[string]time.Time
	progress  map[string]*progress
	running   map[string]*job
	held      map[string]int
	suspects  []string
	lastSweep time.Time
	approvals map[string]*approval

	deadLettered, suspected uint64

	// group commit
	pending   batch
	gen       uint64 // generation the pending writes will commit as
	committed uint64 // last durable generation
	commitCh  chan struct{}
	kick      chan struct{}
	quit      chan struct{}
	stopped   chan struct{}
	failed    error
	closed    bool
	lastPurge time.Time
	// Commits counts bbolt transactions the committer made (a figure for
	// benchmarks: writes per commit).
	commits uint64
}

// DefaultFile is the store's file name under ODEK_HOME.
const DefaultFile = "store.db"

// Open opens (creating it 0600 if missing) the store at path, takes its
// lock and loads the queue. o configures the queue as queue.Options does
// (Prefix, Group and ResultsGroup do not apply).
func Open(path string, o queue.Options) (*Store, error) {
	o = o.WithDefaults()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	lk, err := lockFile(path+".lock", path)
	if err != nil {
		return nil, err
	}
	// InitialMmapSize: growing the file remaps it, which waits for every
	// read transaction; 64 MiB of address space (not memory) avoids that
	// for a store of some 100,000 finished jobs.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, InitialMmapSize: 64 << 20})
	if err != nil {
		lk.Close()
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, &LockedError{Path: path}
		}
		return nil, fmt.Errorf("embedded store: open %s: %w", path, err)
	}
	s := &Store{o: o, path: path, db: db, lock: lk,
		wake: make(chan struct{}), jobs: map[string]*job{}, chats: map[string][]string{}, idem: map[string]idem{},
		delivered: map[string]time.Time{}, progress: map[string]*progress{}, running: map[string]*job{},
		held: map[string]int{}, approvals: map[string]*approval{}, workers: map[string]worker{},
		pending: batch{}, gen: 1, commitCh: make(chan struct{}), kick: make(chan struct{}, 1),
		quit: make(chan struct{}), stopped: make(chan struct{})}
	if err := s.load(); err != nil {
		db.Close()
		lk.Close()
		return nil, err
	}
	go s.committer()
	return s, nil
}

// Path is the store file.
func (s *Store) Path() string { return s.path }

// Close writes what is pending, closes the file and releases the lock.
// Calls after Close fail.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.quit)
	<-s.stopped
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if err == nil && failed != nil && !errors.Is(failed, errClosed) {
		err = failed
	}
	return err
}

var errClosed = errors.New("embedded store: closed")

// load reads the file into memory and reclaims the jobs the previous
// process held.
func (s *Store) load() error {
	now := s.o.Now()
	var running []*job
	buckets := [][]byte{bMeta, bJobs, bDone, bDoneIdx, bResults, bIdem, bDead}
	fresh := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			fresh = fresh || tx.Bucket(b) == nil
		}
		return nil
	})
	if fresh { // a new file (or one from before a bucket was added)
		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, b := range buckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			meta := tx.Bucket(bMeta)
			if meta.Get([]byte("format")) == nil {
				return meta.Put([]byte("format"), []byte(strconv.Itoa(formatVersion)))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("embedded store: initialise %s: %w", s.path, err)
		}
	}
	// Reading needs no write transaction: a start with nothing to reclaim
	// costs no fsync.
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if v := meta.Get([]byte("format")); string(v) != strconv.Itoa(formatVersion) {
			return fmt.Errorf("embedded store: %s has format %q; this odek reads format %d", s.path, v, formatVersion)
		}
		if v := meta.Get([]byte("seq")); len(v) == 8 {
			s.seq = uint64FromBE(v)
		}
		var all []*job
		err := tx.Bucket(bJobs).ForEach(func(k, v []byte) error {
			r, err := parseJobRec(v)
			if err != nil {
				return fmt.Errorf("%w (key %q)", err, k)
			}
			all = append(all, fromRec(r))
			return nil
		})
		if err != nil {
			return err
		}
		sort.Slice(all, func(a, b int) bool { return all[a].enq < all[b].enq })
		for _, j := range all {
			s.jobs[j.job.ID] = j
			lk := queue.LaneKey(j.job.ChatID, j.job.Lane)
			s.chats[lk] = append(s.chats[lk], j.job.ID)
			s.seq = max(s.seq, j.enq)
		}
		err = tx.Bucket(bIdem).ForEach(func(k, v []byte) error {
			id, exp, err := parseIdem(v)
			if err == nil && now.Before(exp) {
				s.idem[string(k)] = idem{id: id, expires: exp}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done := tx.Bucket(bDone)
		err = tx.Bucket(bResults).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return nil
			}
			raw := done.Get(v)
			if raw == nil {
				return nil
			}
			r, err := parseJobRec(raw)
			if err != nil {
				return err
			}
			seq := uint64FromBE(k)
			s.seq = max(s.seq, seq)
			s.results = append(s.results, &result{seq: seq, id: strconv.FormatUint(seq, 10), at: r.DoneAt, res: *r.Result})
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bDead).ForEach(func(k, v []byte) error {
			var d queue.DeadLetter
			if len(k) != 8 || len(v) > maxRecordBytes || json.Unmarshal(v, &d) != nil {
				return nil
			}
			seq := uint64FromBE(k)
			s.seq = max(s.seq, seq)
			s.dead = append(s.dead, deadRec{key: seq, dl: d})
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("embedded store: load %s: %w", s.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.state == stateRunning {
			running = append(running, j)
		}
	}
	sort.Slice(running, func(a, b int) bool { return running[a].enq < running[b].enq })
	for _, j := range running {
		// The previous process died holding the lease: reclaim now, as an
		// expired lease would be.
		j.beat = time.Time{}
		s.running[j.job.ID] = j
		s.held[j.consumer]++
	}
	s.suspects = append(s.suspects, sortedSuspects(s.jobs)...)
	s.reclaimExpiredLocked(now, "lease lost: the process stopped while it ran (restart)")
	inReady := map[string]bool{}
	for _, id := range s.ready {
		inReady[id] = true
	}
	var heads []*job
	for _, ids := range s.chats {
		if head := s.jobs[ids[0]]; !inReady[head.job.ID] && (head.state == stateQueued || head.state == stateReady) {
			heads = append(heads, head)
		}
	}
	sort.Slice(heads, func(a, b int) bool { return heads[a].enq < heads[b].enq })
	for _, head := range heads {
		s.makeReadyLocked(head)
	}
	if len(s.pending) > 0 {
		b := s.pending
		s.pending = batch{}
		seq := s.seq
		if err := s.db.Update(func(tx *bolt.Tx) error {
			if err := b.apply(tx); err != nil {
				return err
			}
			return tx.Bucket(bMeta).Put([]byte("seq"), be64(seq))
		}); err != nil {
			return fmt.Errorf("embedded store: reclaim at start: %w", err)
		}
	}
	s.committed = s.gen // what load wrote is durable
	s.gen++
	return nil
}

func sortedSuspects(jobs map[string]*job) []string {
	var out []*job
	for _, j := range jobs {
		if j.state == stateSuspect {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].since.Before(out[b].since) })
	ids := make([]string, len(out))
	for i, j := range out {
		ids[i] = j.job.ID
	}
	return ids
}

func uint64FromBE(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return n
}

func fromRec(r jobRec) *job {
	j := &job{job: r.Job, enq: r.Seq, attempt: r.Attempt, strikes: r.Strikes, alone: r.Alone, consumer: r.Consumer,
		since: r.Since, history: r.History, canceled: r.Canceled, doneAt: r.DoneAt, seq: r.Seq}
	for i, n := range stateNames {
		if n == r.State {
			j.state = jobState(i)
		}
	}
	if r.Result != nil {
		j.result = *r.Result
	}
	return j
}

// ---- group commit ----

// markJobLocked records j's current state as a pending write.
func (s *Store) markJobLocked(j *job) {
	v, err := json.Marshal(j.rec())
	if err != nil { // cannot happen: every field is plain data
		panic("embedded store: encode job: " + err.Error())
	}
	id := []byte(j.job.ID)
	if j.state == stateDone {
		s.pending.del(bJobs, id)
		s.pending.put(bDone, id, v)
		s.pending.put(bDoneIdx, doneIdxKey(j.doneAt, j.job.ID), nil)
	} else {
		s.pending.put(bJobs, id, v)
	}
	s.kickLocked()
}

func (s *Store) kickLocked() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// genLocked is the generation that makes durable everything this process
// has changed so far: the open one when writes are pending, else the one
// being committed (or already committed).
func (s *Store) genLocked() uint64 {
	if len(s.pending) > 0 {
		return s.gen
	}
	return s.gen - 1
}

// durable waits until generation g is on disk.
func (s *Store) durable(g uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.committed < g && s.failed == nil {
		ch := s.commitCh
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
	if s.committed >= g {
		return nil
	}
	return s.failed
}

func (s *Store) committer() {
	defer close(s.stopped)
	for {
		quit := false
		select {
		case <-s.kick:
		case <-s.quit:
			quit = true
		}
		s.mu.Lock()
		if len(s.pending) == 0 && !quit {
			s.mu.Unlock()
			continue
		}
		b := s.pending
		s.pending = batch{}
		g := s.gen
		s.gen++
		seq := s.seq
		now := s.o.Now()
		purge := now.Sub(s.lastPurge) >= 10*time.Second
		if purge {
			s.lastPurge = now
		}
		retain := s.o.Retain
		s.mu.Unlock()
		var err error
		if len(b) > 0 || purge {
			err = s.db.Update(func(tx *bolt.Tx) error {
				if err := b.apply(tx); err != nil {
					return err
				}
				if err := tx.Bucket(bMeta).Put([]byte("seq"), be64(seq)); err != nil {
					return err
				}
				if purge {
					return purgeDone(tx, now.Add(-retain), 10000)
				}
				return nil
			})
		}
		s.mu.Lock()
		s.commits++
		if err != nil && s.failed == nil {
			s.failed = fmt.Errorf("embedded store: commit to %s failed; the process must restart: %w", s.path, err)
		}
		if err == nil {
			s.committed = g
		}
		close(s.commitCh)
		s.commitCh = make(chan struct{})
		s.notifyLocked()
		if quit {
			if s.failed == nil {
				s.failed = errClosed
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// usable reports the store's failure or closure.
func (s *Store) usableLocked() error {
	if s.failed != nil {
		return s.failed
	}
	if s.closed {
		return errClosed
	}
	return nil
}

// ---- the queue ----

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("embedded store: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func (s *Store) notifyLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

var _ queue.Queue = (*Store)(nil)

// Enqueue implements queue.Queue. It returns once the job is durable.
func (s *Store) Enqueue(ctx context.Context, jb queue.Job) (queue.Job, bool, error) {
	if err := ctx.Err(); err != nil {
		return jb, false, err
	}
	ownID := jb.ID != "" // a caller's id may name a job an earlier process finished
	jb, err := queue.PrepareJob(jb, s.o)
	if err != nil {
		return jb, false, err
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return jb, false, err
	}
	now := s.o.Now()
	s.sweepLocked(now)
	if jb.IdempotencyKey != "" {
		if e, ok := s.idem[jb.IdempotencyKey]; ok && now.Before(e.expires) {
			g := s.genLocked()
			prev := queue.Job{ID: e.id, IdempotencyKey: jb.IdempotencyKey}
			if p, ok := s.jobs[e.id]; ok {
				prev = p.job
			} else if r, ok := s.diskJob(e.id); ok {
				prev = r.Job
			}
			s.mu.Unlock()
			// The first enqueue may not be durable yet: the duplicate
			// answers only once it is.
			return prev, true, s.durable(g)
		}
	}
	exists := s.jobs[jb.ID] != nil
	if !exists && ownID {
		_, exists = s.diskJob(jb.ID)
	}
	if exists {
		s.mu.Unlock()
		return jb, false, fmt.Errorf("%w: id %q already exists", queue.ErrInvalidJob, jb.ID)
	}
	if jb.IdempotencyKey != "" {
		exp := now.Add(s.o.DedupeWindow)
		s.idem[jb.IdempotencyKey] = idem{id: jb.ID, expires: exp}
		s.pending.put(bIdem, []byte(jb.IdempotencyKey), idemVal(jb.ID, exp))
	}
	s.seq++
	j := &job{job: jb, state: stateQueued, enq: s.seq}
	s.jobs[jb.ID] = j
	lk := queue.LaneKey(jb.ChatID, jb.Lane)
	s.chats[lk] = append(s.chats[lk], jb.ID)
	if len(s.chats[lk]) == 1 {
		s.makeReadyLocked(j)
	}
	s.markJobLocked(j)
	g := s.genLocked()
	s.mu.Unlock()
	return jb, false, s.durable(g)
}

// diskJob reads a finished job of an earlier process. s.mu is held (a
// read transaction does not wait for the committer).
func (s *Store) diskJob(id string) (jobRec, bool) {
	var r jobRec
	ok := false
	_ = s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bDone); b != nil {
			if v := b.Get([]byte(id)); v != nil {
				var err error
				r, err = parseJobRec(v)
				ok = err == nil && s.o.Now().Sub(r.DoneAt) < s.o.Retain
			}
		}
		return nil
	})
	return r, ok
}

func (s *Store) makeReadyLocked(j *job) {
	s.seq++
	j.seq = s.seq
	j.state = stateReady
	s.ready = append(s.ready, j.job.ID)
	s.notifyLocked()
}

// sweepLocked forgets expired keys and old records (at most once a second).
func (s *Store) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < time.Second {
		return
	}
	s.lastSweep = now
	for k, e := range s.idem {
		if !now.Before(e.expires) {
			delete(s.idem, k)
			s.pending.del(bIdem, []byte(k))
		}
	}
	for id, j := range s.jobs {
		if j.state == stateDone && now.Sub(j.doneAt) >= s.o.Retain {
			delete(s.jobs, id) // the file's copy goes with the committer's purge
		}
	}
	for id, p := range s.progress {
		if !p.doneAt.IsZero() && now.Sub(p.doneAt) >= s.o.Retain {
			delete(s.progress, id)
		}
	}
	for id, t := range s.delivered {
		if now.Sub(t) >= s.o.Retain {
			delete(s.delivered, id)
		}
	}
	kept := s.results[:0]
	for _, r := range s.results {
		if !r.acked && now.Sub(r.at) < s.o.ResultsRetain {
			kept = append(kept, r)
		} else if !r.acked {
			s.pending.del(bResults, be64(r.seq))
		}
	}
	s.results = kept
	s.trimDeadLocked(now, s.o.DeadRetain)
	if over := len(s.dead) - int(s.o.DeadMaxLen); over > 0 {
		for _, d := range s.dead[:over] {
			s.pending.del(bDead, be64(d.key))
		}
		s.dead = append(s.dead[:0:0], s.dead[over:]...)
	}
	s.kickLocked()
}

func (s *Store) trimDeadLocked(now time.Time, age time.Duration) int64 {
	kept := s.dead[:0]
	var n int64
	for _, d := range s.dead {
		if now.Sub(d.dl.At) < age {
			kept = append(kept, d)
		} else {
			s.pending.del(bDead, be64(d.key))
			n++
		}
	}
	s.dead = kept
	if n > 0 {
		s.kickLocked()
	}
	return n
}

// finishLocked publishes res once, frees the job's chat and starts its
// next job.
func (s *Store) finishLocked(j *job, res queue.Result) {
	if j.state == stateDone {
		return
	}
	j.state, j.doneAt = stateDone, s.o.Now()
	j.since = j.doneAt
	j.result = res
	s.releaseLocked(j)
	if p := s.progress[j.job.ID]; p != nil {
		p.doneAt = j.doneAt
	}
	s.seq++
	s.results = append(s.results, &result{seq: s.seq, id: strconv.FormatUint(s.seq, 10), res: res, at: j.doneAt, gen: s.gen})
	s.pending.put(bResults, be64(s.seq), []byte(j.job.ID))
	s.markJobLocked(j)
	lk := queue.LaneKey(j.job.ChatID, j.job.Lane)
	ids := s.chats[lk]
	for i, id := range ids {
		if id == j.job.ID {
			ids = append(ids[:i:i], ids[i+1:]...)
			break
		}
	}
	if len(ids) == 0 {
		delete(s.chats, lk)
	} else {
		s.chats[lk] = ids
		if head := s.jobs[ids[0]]; head.state == stateQueued {
			s.makeReadyLocked(head)
		}
	}
	s.notifyLocked()
}

// Claim implements queue.Queue. It does not wait for the disk: the lease's
// record (attempt, alone) is in the next commit, milliseconds away, long
// before a job could kill the process (its first model call alone takes
// longer), so a process-killing job is still counted at the next start;
// a lease lost with a crash inside that instant just runs again.
func (s *Store) Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Lease, error) {
	if max <= 0 {
		max = 1
	}
	return waitFor(ctx, s, block, func() []queue.Lease { return s.claimLocked(consumer, max) })
}

// reclaimExpiredLocked turns every expired lease into a suspect, a dead
// letter or a canceled result, oldest first.
func (s *Store) reclaimExpiredLocked(now time.Time, why string) {
	var expired []*job
	for _, j := range s.running {
		if now.Sub(j.beat) >= s.o.LeaseTTL {
			expired = append(expired, j)
		}
	}
	sort.Slice(expired, func(a, b int) bool { return expired[a].seq < expired[b].seq })
	for _, j := range expired {
		how := "beside other jobs"
		if j.alone {
			j.strikes++
			how = "alone"
		}
		j.history = append(j.history, queue.AttemptEnd{Attempt: j.attempt, Worker: j.consumer, Reason: why + " (" + how + ")"})
		switch queue.DecideReclaim(j.strikes, s.o.MaxAttempts, j.canceled) {
		case queue.ReclaimCancel:
			s.finishLocked(j, queue.CanceledResult(j.job, j.attempt))
		case queue.ReclaimDead:
			dj := j.job
			dj.Attempt = j.attempt
			s.seq++
			d := deadRec{key: s.seq, dl: queue.DeadLetter{Job: dj, At: now, Strikes: j.strikes, History: append([]queue.AttemptEnd(nil), j.history...)}}
			s.dead = append(s.dead, d)
			v, _ := json.Marshal(d.dl)
			s.pending.put(bDead, be64(d.key), v)
			s.deadLettered++
			s.finishLocked(j, queue.DeadResult(j.job, j.strikes, j.attempt, s.o.MaxAttempts))
		default:
			s.releaseLocked(j)
			j.state, j.alone, j.since = stateSuspect, false, now
			s.suspects = append(s.suspects, j.job.ID)
			s.suspected++
			s.markJobLocked(j)
			s.notifyLocked()
		}
	}
}

func (s *Store) claimLocked(consumer string, max int) []queue.Lease {
	if s.usableLocked() != nil {
		return nil
	}
	now := s.o.Now()
	s.reclaimExpiredLocked(now, "lease expired: worker died or stalled")
	if s.held[consumer] == 0 {
		for len(s.suspects) > 0 {
			id := s.suspects[0]
			s.suspects = s.suspects[1:]
			j := s.jobs[id]
			if j == nil || j.state != stateSuspect {
				continue
			}
			j.alone = true
			l := s.leaseLocked(j, consumer, now)
			l.Suspect = true
			return []queue.Lease{l}
		}
	}
	var leases []queue.Lease
	for len(leases) < max && len(s.ready) > 0 {
		id := s.ready[0]
		s.ready = s.ready[1:]
		j := s.jobs[id]
		if j == nil || j.state != stateReady {
			continue
		}
		if j.canceled {
			s.finishLocked(j, queue.CanceledResult(j.job, j.attempt))
			continue
		}
		leases = append(leases, s.leaseLocked(j, consumer, now))
	}
	return leases
}

// leaseLocked hands j to consumer. The lease is identified by the job id
// and its attempt number, which rises with every claim.
func (s *Store) leaseLocked(j *job, consumer string, now time.Time) queue.Lease {
	j.attempt++
	j.state, j.beat, j.consumer, j.since = stateRunning, now, consumer, now
	s.running[j.job.ID] = j
	s.held[consumer]++
	s.markJobLocked(j)
	jb := j.job
	jb.Attempt = j.attempt
	return queue.Lease{Job: jb, Consumer: consumer}
}

func (s *Store) releaseLocked(j *job) {
	if _, ok := s.running[j.job.ID]; !ok {
		return
	}
	delete(s.running, j.job.ID)
	if s.held[j.consumer]--; s.held[j.consumer] <= 0 {
		delete(s.held, j.consumer)
	}
}

// ownedLocked returns the job if l is its current lease.
func (s *Store) ownedLocked(l queue.Lease) *job {
	j := s.jobs[l.Job.ID]
	if j == nil || j.state != stateRunning || j.attempt != l.Job.Attempt || j.consumer != l.Consumer {
		return nil
	}
	return j
}

// Heartbeat implements queue.Queue. Renewals are not written: a restart
// reclaims every lease anyway.
func (s *Store) Heartbeat(ctx context.Context, l queue.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	j := s.ownedLocked(l)
	if j == nil {
		return queue.ErrLeaseLost
	}
	j.beat = s.o.Now()
	if j.canceled {
		return queue.ErrCanceled
	}
	return nil
}

// HeartbeatBatch implements queue.HeartbeatBatcher.
func (s *Store) HeartbeatBatch(ctx context.Context, ls []queue.Lease) []error {
	errs := make([]error, len(ls))
	for i, l := range ls {
		errs[i] = s.Heartbeat(ctx, l)
	}
	return errs
}

// Ack implements queue.Queue. It returns once the result is durable.
func (s *Store) Ack(ctx context.Context, l queue.Lease, res queue.Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res, err := queue.EncodeResult(l, res, s.o)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	j := s.ownedLocked(l)
	if j == nil {
		s.mu.Unlock()
		return queue.ErrLeaseLost
	}
	s.finishLocked(j, res)
	g := s.genLocked()
	s.mu.Unlock()
	return s.durable(g)
}

// Cancel implements queue.Queue.
func (s *Store) Cancel(ctx context.Context, jobID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	j := s.jobs[jobID]
	if j == nil || j.state == stateDone {
		s.mu.Unlock()
		return queue.ErrNotFound
	}
	switch j.state {
	case stateQueued, stateReady, stateSuspect:
		s.finishLocked(j, queue.CanceledResult(j.job, j.attempt))
	default:
		j.canceled = true
		s.markJobLocked(j)
		s.notifyLocked()
	}
	g := s.genLocked()
	s.mu.Unlock()
	return s.durable(g)
}

// PublishProgress implements queue.Queue (in memory only).
func (s *Store) PublishProgress(ctx context.Context, jobID string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(data) > s.o.MaxPayloadBytes {
		return &queue.PayloadTooLargeError{What: "progress", Limit: s.o.MaxPayloadBytes, Size: len(data)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.progress[jobID]
	if p == nil {
		p = &progress{}
		s.progress[jobID] = p
	}
	p.next++
	p.entries = append(p.entries, queue.Progress{ID: strconv.FormatUint(p.next, 10), Data: append([]byte(nil), data...)})
	if over := int64(len(p.entries)) - s.o.ProgressMaxLen; over > 0 {
		p.entries = append(p.entries[:0:0], p.entries[over:]...)
	}
	s.notifyLocked()
	return nil
}

// PublishProgressBatch implements queue.ProgressBatcher.
func (s *Store) PublishProgressBatch(ctx context.Context, entries []queue.ProgressEntry) error {
	var tooLarge error
	for _, e := range entries {
		err := s.PublishProgress(ctx, e.JobID, e.Data)
		if err != nil && tooLarge == nil {
			tooLarge = err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return tooLarge
}

// ReadProgress implements queue.Queue.
func (s *Store) ReadProgress(ctx context.Context, jobID, after string, max int, block time.Duration) ([]queue.Progress, error) {
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("embedded store: progress id %q is not an embedded progress id", clip(after, 40))
		}
		from = n
	}
	if max <= 0 {
		max = 100
	}
	return waitFor(ctx, s, block, func() []queue.Progress {
		p := s.progress[jobID]
		if p == nil {
			return nil
		}
		var out []queue.Progress
		for _, e := range p.entries {
			if n, _ := strconv.ParseUint(e.ID, 10, 64); n > from && len(out) < max {
				out = append(out, queue.Progress{ID: e.ID, Data: append([]byte(nil), e.Data...)})
			}
		}
		return out
	})
}

// ReadResults implements queue.Queue. Only durable results are handed out:
// a chat never sees an answer a crash could take back.
func (s *Store) ReadResults(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Delivery, error) {
	if max <= 0 {
		max = 1
	}
	return waitFor(ctx, s, block, func() []queue.Delivery {
		now := s.o.Now()
		var out []queue.Delivery
		for _, r := range s.results {
			if len(out) == max {
				break
			}
			if r.acked || r.gen > s.committed {
				continue
			}
			if _, ok := s.delivered[r.res.JobID]; ok {
				r.acked = true
				continue
			}
			if r.read && now.Sub(r.readAt) < s.o.ResultLeaseTTL {
				continue
			}
			r.read, r.readAt, r.consumer = true, now, consumer
			res := r.res
			res.Artifacts = append([]queue.ArtifactMeta(nil), res.Artifacts...)
			out = append(out, queue.Delivery{ID: r.id, Result: res})
		}
		return out
	})
}

// AckResult implements queue.Queue. It returns once the delivery is
// durable, so a restart does not send the answer again.
func (s *Store) AckResult(ctx context.Context, d queue.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	for _, r := range s.results {
		if r.id == d.ID && !r.acked {
			r.acked = true
			s.pending.del(bResults, be64(r.seq))
			s.kickLocked()
		}
	}
	if _, ok := s.delivered[d.Result.JobID]; !ok {
		s.delivered[d.Result.JobID] = s.o.Now()
	}
	// Drop acknowledged results from the front of the list.
	i := 0
	for i < len(s.results) && s.results[i].acked {
		i++
	}
	s.results = s.results[i:]
	g := s.genLocked()
	s.mu.Unlock()
	return s.durable(g)
}

// waitFor calls poll under s.mu until it returns something, block passes
// or ctx ends.
func waitFor[T any](ctx context.Context, s *Store, block time.Duration, poll func() []T) ([]T, error) {
	var timer *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		if err := s.usableLocked(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		out := poll()
		wake := s.wake
		s.mu.Unlock()
		if len(out) > 0 || block <= 0 {
			return out, nil
		}
		if timer == nil {
			timer = time.NewTimer(block)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			block = 0
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
