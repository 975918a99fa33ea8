// Package embedded is odek-bot's crash-safe store for embedded mode (no
// REDIS_URL): one bbolt file under ODEK_HOME that holds the job queue
// (jobs, leases' attempts and strikes, results not yet delivered, dead
// letters, idempotency keys) and small key-value buckets for the bot's chat
// state and status ledger.
//
// A Store is a queue.Memory with a bbolt journal: the queue's one state
// machine runs in memory under the Memory's lock and hands every change
// that must survive a crash to the journal (queue.Journal) as a record;
// Open rebuilds the Memory from the file (queue.RestoreMemory). It
// implements queue.Queue, queue.Operator, queue.Inspector, queue.Approvals
// queue.SentRecorder (a result's delivery progress, bucket "sent")
// and the queue's other optional interfaces with the same behaviour as
// queue.Redis; queuetest.Run is its conformance suite.
//
// Durability: one committer goroutine moves all pending records into one
// bbolt transaction, which bbolt makes durable (fsync) before it returns;
// writers that arrive during a commit share the next one (group commit).
// Enqueue, Ack, Cancel, Retry, PurgeDead and AckResult return only after
// their change is durable, and ReadResults hands out only results that are
// durable, so nothing a user or a worker was told can be lost by a crash.
// Progress entries, approval questions and the worker registry are in
// memory only: they describe a running process and die with it.
//
// At Open, jobs that were running when the previous process died are
// reclaimed as if their leases had expired (a strike if they ran alone, a
// suspect to be retried alone, dead-lettered after MaxAttempts), results
// not yet acknowledged are handed out again, and the queued jobs resume in
// per-chat order. Finished jobs stay in the file for Retain (for
// idempotency, JobResult and Inspect) and are read from it on demand, not
// loaded at Open.
//
// Ownership: Open takes an exclusive flock on <path>.lock (the holder's pid
// is written in it); a second Open, from any process, fails with a
// *LockedError naming that pid. Close releases it. Safe for concurrent use.
package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/odekrun/odek/queue"
)

// Store is the embedded store. Open it once per process; Close it.
type Store struct {
	*queue.Memory
	// scheduleCounts is ServeScheduleCounts's counter (adminwrite.go).
	scheduleCounts atomic.Value
	j              *journal
	path           string
	db             *bolt.DB
	lock           *os.File
	// stopAdmin stops the admin socket's server (ServeAdmin); nil: none.
	stopAdmin func()
	bs        budgetState // budgets.go
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
	j := newJournal(db, path, o)
	if err := j.restore(); err != nil {
		db.Close()
		lk.Close()
		return nil, err
	}
	go j.committer()
	return &Store{Memory: j.mem, j: j, path: path, db: db, lock: lk}, nil
}

// Path is the store file.
func (s *Store) Path() string { return s.path }

// Commits is how many transactions the store has committed (each one
// fsync): jobs per commit is a benchmark figure of the group commit.
func (s *Store) Commits() uint64 {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	return s.j.commits
}

// Close writes what is pending, closes the file and releases the lock.
// Calls after Close fail.
func (s *Store) Close() error {
	s.j.mu.Lock()
	if s.j.closed {
		s.j.mu.Unlock()
		return nil
	}
	s.j.closed = true
	s.j.mu.Unlock()
	if s.stopAdmin != nil {
		s.stopAdmin()
	}
	close(s.j.quit)
	<-s.j.stopped
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	s.j.mu.Lock()
	failed := s.j.failed
	s.j.mu.Unlock()
	if err == nil && failed != nil && !errors.Is(failed, errClosed) {
		err = failed
	}
	return err
}

var errClosed = errors.New("embedded store: closed")

// journal is the queue's bbolt journal (queue.Journal).
type journal struct {
	db   *bolt.DB
	path string
	o    queue.Options
	mem  *queue.Memory

	// Guarded by mem's lock (queue.Journal's methods are called under it;
	// the committer takes it through mem.WithLock).
	pending batch
	gen     uint64 // the commit the pending records will be in
	seq     uint64 // highest sequence number recorded

	// Guarded by mu (taken inside mem's lock, never the other way).
	mu        sync.Mutex
	committed uint64 // last durable commit
	commitCh  chan struct{}
	failed    error
	closed    bool
	commits   uint64

	kick      chan struct{}
	quit      chan struct{}
	stopped   chan struct{}
	lastPurge time.Time
}

var _ queue.Journal = (*journal)(nil)

func newJournal(db *bolt.DB, path string, o queue.Options) *journal {
	return &journal{db: db, path: path, o: o, pending: batch{}, gen: 1, commitCh: make(chan struct{}),
		kick: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// Record implements queue.Journal.
func (j *journal) Record(c queue.Change) {
	switch c.Kind {
	case queue.ChangeJob:
		v, err := json.Marshal(c.Job)
		if err != nil { // cannot happen: every field is plain data
			panic("embedded store: encode job: " + err.Error())
		}
		id := []byte(c.Job.Job.ID)
		if c.Job.State == queue.StateDone {
			j.pending.del(bJobs, id)
			j.pending.put(bDone, id, v)
			j.pending.put(bDoneIdx, doneIdxKey(c.Job.DoneAt, c.Job.Job.ID), nil)
		} else {
			j.pending.put(bJobs, id, v)
		}
		j.seq = max(j.seq, c.Job.Seq)
	case queue.ChangeResult:
		j.pending.put(bResults, be64(c.Key), []byte(c.JobID))
		j.seq = max(j.seq, c.Key)
	case queue.ChangeResultGone:
		j.pending.del(bResults, be64(c.Key))
		j.pending.del(bSent, be64(c.Key))
	case queue.ChangeSent:
		v, err := json.Marshal(c.Sent)
		if err != nil {
			panic("embedded store: encode sent record: " + err.Error())
		}
		j.pending.put(bSent, be64(c.Key), v)
	case queue.ChangeIdem:
		j.pending.put(bIdem, []byte(c.IdemKey), idemVal(c.JobID, c.Expires))
	case queue.ChangeIdemGone:
		j.pending.del(bIdem, []byte(c.IdemKey))
	case queue.ChangeDead:
		v, err := json.Marshal(c.Dead)
		if err != nil {
			panic("embedded store: encode dead letter: " + err.Error())
		}
		j.pending.put(bDead, be64(c.Key), v)
		j.seq = max(j.seq, c.Key)
	case queue.ChangeDeadGone:
		j.pending.del(bDead, be64(c.Key))
	}
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// Mark implements queue.Journal: the open commit when records are
// pending, else the one being committed (or already committed).
func (j *journal) Mark() uint64 {
	if len(j.pending) > 0 {
		return j.gen
	}
	return j.gen - 1
}

// Durable implements queue.Journal.
func (j *journal) Durable() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.committed
}

// Err implements queue.Journal.
func (j *journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	if j.closed {
		return errClosed
	}
	return nil
}

// Wait implements queue.Journal.
func (j *journal) Wait(g uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.committed < g && j.failed == nil {
		ch := j.commitCh
		j.mu.Unlock()
		<-ch
		j.mu.Lock()
	}
	if j.committed >= g {
		return nil
	}
	return j.failed
}

// Finished implements queue.Journal: a read transaction, which does not
// wait for the committer.
func (j *journal) Finished(id string) (queue.JobRecord, bool) {
	var r queue.JobRecord
	ok := false
	_ = j.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bDone); b != nil {
			if v := b.Get([]byte(id)); v != nil {
				var err error
				r, err = parseJobRec(v)
				ok = err == nil
			}
		}
		return nil
	})
	return r, ok
}

func (j *journal) committer() {
	defer close(j.stopped)
	for {
		quit := false
		select {
		case <-j.kick:
		case <-j.quit:
			quit = true
		}
		// Gather: yield a few times before taking the batch, so the
		// writers the last commit released (producers whose Enqueue just
		// returned) add their next change to this commit instead of
		// missing it and waiting a whole extra commit. Without it the
		// commits alternate between full and nearly empty ones; with it
		// `embeddedbench` (16 producers) needs 37 % fewer commits (fsyncs)
		// for the same jobs. Costs nothing when no one else is runnable.
		for range 3 {
			runtime.Gosched()
		}
		var b batch
		var g, seq uint64
		j.mem.WithLock(func() {
			if len(j.pending) > 0 || quit {
				b, g, seq = j.pending, j.gen, j.seq
				j.pending = batch{}
				j.gen++
			}
		})
		if b == nil && !quit {
			continue
		}
		now := j.o.Now()
		purge := now.Sub(j.lastPurge) >= 10*time.Second
		if purge {
			j.lastPurge = now
		}
		var err error
		if len(b) > 0 || purge {
			err = j.db.Update(func(tx *bolt.Tx) error {
				if err := b.apply(tx); err != nil {
					return err
				}
				if err := tx.Bucket(bMeta).Put([]byte("seq"), be64(seq)); err != nil {
					return err
				}
				if purge {
					return purgeDone(tx, now.Add(-j.o.Retain), 10000)
				}
				return nil
			})
		}
		j.mu.Lock()
		j.commits++
		if err != nil && j.failed == nil {
			j.failed = fmt.Errorf("embedded store: commit to %s failed; the process must restart: %w", j.path, err)
		}
		if err == nil {
			j.committed = g
		}
		close(j.commitCh)
		j.commitCh = make(chan struct{})
		if quit && j.failed == nil {
			j.failed = errClosed
		}
		j.mu.Unlock()
		j.mem.Wake()
		if quit {
			return
		}
	}
}

// restore reads the file and rebuilds the queue; the reclaims it records
// (jobs the previous process held) are durable when it returns.
func (j *journal) restore() error {
	buckets := [][]byte{bMeta, bJobs, bDone, bDoneIdx, bResults, bIdem, bDead, bSent}
	fresh := false
	_ = j.db.View(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			fresh = fresh || tx.Bucket(b) == nil
		}
		return nil
	})
	if fresh { // a new file (or one from before a bucket was added)
		err := j.db.Update(func(tx *bolt.Tx) error {
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
			return fmt.Errorf("embedded store: initialise %s: %w", j.path, err)
		}
	}
	// Reading needs no write transaction: a start with nothing to reclaim
	// costs no fsync.
	var snap queue.Snapshot
	if err := j.db.View(func(tx *bolt.Tx) error { return readSnapshot(tx, j.path, &snap) }); err != nil {
		return fmt.Errorf("embedded store: load %s: %w", j.path, err)
	}
	j.seq = snap.Seq
	j.mem = queue.RestoreMemory(j.o, j, snap)
	if len(j.pending) > 0 {
		b, seq := j.pending, j.seq
		j.pending = batch{}
		if err := j.db.Update(func(tx *bolt.Tx) error {
			if err := b.apply(tx); err != nil {
				return err
			}
			return tx.Bucket(bMeta).Put([]byte("seq"), be64(seq))
		}); err != nil {
			return fmt.Errorf("embedded store: reclaim at start: %w", err)
		}
	}
	j.committed = j.gen // what restore wrote is durable
	j.gen++
	return nil
}

// readSnapshot reads the queue's records: unfinished jobs, undelivered
// results (with their finished jobs), idempotency keys and dead letters.
// Finished jobs without a pending result are left in the file.
func readSnapshot(tx *bolt.Tx, path string, snap *queue.Snapshot) error {
	meta := tx.Bucket(bMeta)
	if v := meta.Get([]byte("format")); string(v) != strconv.Itoa(formatVersion) {
		return fmt.Errorf("embedded store: %s has format %q; this odek reads format %d", path, v, formatVersion)
	}
	if v := meta.Get([]byte("seq")); len(v) == 8 {
		snap.Seq = uint64FromBE(v)
	}
	err := tx.Bucket(bJobs).ForEach(func(k, v []byte) error {
		r, err := parseJobRec(v)
		if err != nil {
			return fmt.Errorf("%w (key %q)", err, k)
		}
		snap.Jobs = append(snap.Jobs, r)
		return nil
	})
	if err != nil {
		return err
	}
	err = tx.Bucket(bIdem).ForEach(func(k, v []byte) error {
		if id, exp, err := parseIdem(v); err == nil {
			snap.Idem = append(snap.Idem, queue.IdemRecord{Key: string(k), JobID: id, Expires: exp})
		}
		return nil
	})
	if err != nil {
		return err
	}
	done, sent := tx.Bucket(bDone), tx.Bucket(bSent)
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
		rr := queue.ResultRecord{Key: uint64FromBE(k), Job: r}
		if sv := sent.Get(k); sv != nil && len(sv) <= maxRecordBytes {
			// Unreadable or out of range: deliver from the start (a
			// duplicate rather than a skipped answer).
			if st, ok := parseSent(sv); ok {
				rr.Sent = st
			}
		}
		snap.Results = append(snap.Results, rr)
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
		snap.Dead = append(snap.Dead, queue.DeadLetterItem{Key: uint64FromBE(k), Dead: d})
		return nil
	})
}

func uint64FromBE(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return n
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
