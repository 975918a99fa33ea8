package queue

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"time"
)

// A Journal makes a Memory queue durable: the Memory hands it every change
// of its state that must survive a crash, as a Change record, and waits for
// the journal before it acknowledges a user-visible step (Enqueue, Ack,
// Cancel, AckResult, PurgeDead). ReadResults hands out only results the
// journal reports durable. RestoreMemory rebuilds the queue from what a
// journal kept. queue/embedded is the bbolt journal.
//
// Locking: Record, Mark, Durable, Err and Finished are called with the
// Memory's lock held, in the order of the changes; they must not call back
// into the Memory. A journal that commits in the background takes the
// pending records under the same lock, through Memory.WithLock, so the
// records of one queue operation always land in one commit, and calls
// Memory.Wake after each commit. Wait is called without the lock.
type Journal interface {
	// Record adds one change to the next commit.
	Record(c Change)
	// Mark is the commit that holds every change recorded so far.
	Mark() uint64
	// Durable is the last commit on disk.
	Durable() uint64
	// Wait blocks until commit g is durable, or the journal failed.
	Wait(g uint64) error
	// Err is non-nil once the journal failed or closed: the queue then
	// refuses every change.
	Err() error
	// Finished returns a finished job the Memory no longer holds (one a
	// previous process finished), if the journal still has it.
	Finished(id string) (JobRecord, bool)
}

// ChangeKind names what a Change records.
type ChangeKind int

// Change kinds.
const (
	ChangeJob        ChangeKind = iota + 1 // Job: a job's whole state (finished: with its result)
	ChangeResult                           // Key, JobID: a result to deliver
	ChangeResultGone                       // Key: the result was delivered or expired
	ChangeIdem                             // IdemKey, JobID, Expires: an idempotency key
	ChangeIdemGone                         // IdemKey: the key expired
	ChangeDead                             // Key, Dead: a dead letter
	ChangeDeadGone                         // Key: the dead letter was retried or purged
	ChangeSent                             // Key, JobID, Sent: how far the result's delivery got (gone with the result)
)

// Change is one record of a Memory's journal.
type Change struct {
	Kind    ChangeKind
	Job     *JobRecord
	Key     uint64 // result or dead-letter sequence number
	JobID   string
	IdemKey string
	Expires time.Time
	Dead    *DeadLetter
	Sent    *Sent
}

// JobRecord is a job's state as a journal keeps it. State is one of
// StateQueued, StateReady, StateRunning, StateSuspect, StateDone.
type JobRecord struct {
	Job      Job          `json:"job"` // Attempt: 0 (see the Attempt field)
	Seq      uint64       `json:"seq"` // enqueue order: per-chat order on restore
	State    string       `json:"state"`
	Attempt  int          `json:"attempt,omitempty"`
	Strikes  int          `json:"strikes,omitempty"`
	Alone    bool         `json:"alone,omitempty"`
	Consumer string       `json:"consumer,omitempty"`
	Since    time.Time    `json:"since,omitzero"`
	History  []AttemptEnd `json:"history,omitempty"`
	Canceled bool         `json:"canceled,omitempty"`
	DoneAt   time.Time    `json:"done_at,omitzero"`
	Result   *Result      `json:"result,omitempty"`
}

// Snapshot is what a journal kept, for RestoreMemory.
type Snapshot struct {
	Seq     uint64           // highest sequence number used
	Jobs    []JobRecord      // unfinished jobs
	Results []ResultRecord   // results not yet delivered
	Idem    []IdemRecord     // idempotency keys
	Dead    []DeadLetterItem // dead letters
}

// ResultRecord is a result to deliver: its sequence number and its
// finished job.
type ResultRecord struct {
	Key  uint64
	Job  JobRecord
	Sent Sent // the last RecordSent of it
}

// IdemRecord is an idempotency key and the job it names.
type IdemRecord struct {
	Key     string
	JobID   string
	Expires time.Time
}

// DeadLetterItem is a dead letter and its sequence number.
type DeadLetterItem struct {
	Key  uint64
	Dead DeadLetter
}

var stateNames = [...]string{StateQueued, StateReady, StateRunning, StateSuspect, StateDone}

func (j *memJob) record() JobRecord {
	r := JobRecord{Job: j.job, Seq: j.enq, State: stateNames[j.state], Attempt: j.attempt, Strikes: j.strikes,
		Alone: j.alone, Consumer: j.consumer, Since: j.since, History: j.history, Canceled: j.canceled, DoneAt: j.doneAt}
	r.Job.Attempt = 0
	if j.state == stateDone {
		res := j.result
		r.Result = &res
	}
	return r
}

func jobFromRecord(r JobRecord) *memJob {
	j := &memJob{job: r.Job, enq: r.Seq, seq: r.Seq, attempt: r.Attempt, strikes: r.Strikes, alone: r.Alone,
		consumer: r.Consumer, since: r.Since, history: r.History, canceled: r.Canceled, doneAt: r.DoneAt}
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

// NewJournaledMemory returns an empty queue that records its changes in j.
// Its job ids are in time order (see orderedID).
func NewJournaledMemory(opts Options, j Journal) *Memory {
	m := NewMemory(opts)
	m.j = j
	m.newID = orderedID
	return m
}

// orderedID is 16 hex digits of the clock (ns) and 16 random: ids a B-tree
// journal keys its records by arrive in order, so one commit's new jobs
// share a few leaf pages instead of dirtying a random page each (fewer
// pages written per fsync). 64 random bits keep ids unguessable.
func orderedID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	if _, err := rand.Read(b[8:]); err != nil {
		panic("queue: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// RestoreMemory rebuilds a queue from what journal j kept and goes on
// recording in j. Jobs that were running when the previous process died
// are reclaimed as if their leases had expired (a strike if they ran
// alone, a suspect to be retried alone, dead-lettered after MaxAttempts);
// those changes are recorded in j, and the caller makes them durable
// (j.Wait(j.Mark())) before it uses the queue. Queued jobs resume in
// per-chat order; undelivered results are handed out again.
func RestoreMemory(opts Options, j Journal, s Snapshot) *Memory {
	m := NewJournaledMemory(opts, j)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Now()
	m.seq = s.Seq
	jobs := append([]JobRecord(nil), s.Jobs...)
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Seq < jobs[b].Seq })
	var running, suspects []*memJob
	for _, r := range jobs {
		jb := jobFromRecord(r)
		m.jobs[jb.job.ID] = jb
		lk := LaneKey(jb.job.ChatID, jb.job.Lane)
		m.chats[lk] = append(m.chats[lk], jb.job.ID)
		m.seq = max(m.seq, jb.enq)
		switch jb.state {
		case stateRunning:
			running = append(running, jb)
		case stateSuspect:
			suspects = append(suspects, jb)
		}
	}
	for _, e := range s.Idem {
		if now.Before(e.Expires) {
			m.idem[e.Key] = memIdem{id: e.JobID, expires: e.Expires}
		}
	}
	results := append([]ResultRecord(nil), s.Results...)
	sort.Slice(results, func(a, b int) bool { return results[a].Key < results[b].Key })
	for _, r := range results {
		if r.Job.Result == nil {
			continue
		}
		m.seq = max(m.seq, r.Key)
		mr := newMemResult(r.Key, *r.Job.Result, r.Job.DoneAt)
		mr.sent = r.Sent.clone()
		m.results = append(m.results, mr)
	}
	dead := append([]DeadLetterItem(nil), s.Dead...)
	sort.Slice(dead, func(a, b int) bool { return dead[a].Key < dead[b].Key })
	for _, d := range dead {
		m.seq = max(m.seq, d.Key)
		m.dead = append(m.dead, memDead{key: d.Key, DeadLetter: d.Dead})
	}
	// The previous process died holding these leases: reclaim them now, as
	// expired leases would be.
	for _, jb := range running {
		jb.beat = time.Time{}
		m.running[jb.job.ID] = jb
		m.held[jb.consumer]++
	}
	sort.SliceStable(suspects, func(a, b int) bool { return suspects[a].since.Before(suspects[b].since) })
	for _, jb := range suspects {
		m.suspects = append(m.suspects, jb.job.ID)
	}
	m.reclaimExpiredLocked(now, "lease lost: the process stopped while it ran (restart)")
	inReady := map[string]bool{}
	for _, id := range m.ready {
		inReady[id] = true
	}
	var heads []*memJob
	for _, ids := range m.chats {
		if head := m.jobs[ids[0]]; !inReady[head.job.ID] && (head.state == stateQueued || head.state == stateReady) {
			heads = append(heads, head)
		}
	}
	sort.Slice(heads, func(a, b int) bool { return heads[a].enq < heads[b].enq })
	for _, head := range heads {
		m.makeReadyLocked(head)
	}
	return m
}

// WithLock runs fn under the queue's lock. A Journal's committer uses it
// to take the pending records, so the records of one queue operation land
// in one commit.
func (m *Memory) WithLock(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn()
}

// Wake wakes every waiter (Claim, ReadResults, …) to look again: a
// Journal calls it when a commit became durable, which may release
// results to ReadResults.
func (m *Memory) Wake() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notifyLocked()
}

// ---- the hooks Memory calls (m.mu held) ----

func (m *Memory) recordLocked(c Change) {
	if m.j != nil {
		m.j.Record(c)
	}
}

func (m *Memory) recordJobLocked(j *memJob) {
	if m.j != nil {
		r := j.record()
		m.j.Record(Change{Kind: ChangeJob, Job: &r})
	}
}

// markLocked is the commit that makes every change so far durable (0
// without a journal).
func (m *Memory) markLocked() uint64 {
	if m.j == nil {
		return 0
	}
	return m.j.Mark()
}

// wait blocks until commit g is durable. m.mu must not be held.
func (m *Memory) wait(g uint64) error {
	if m.j == nil {
		return nil
	}
	return m.j.Wait(g)
}

// unlockAndWait releases m.mu and waits until every change made under it
// is durable: the end of every operation that acknowledges a step.
func (m *Memory) unlockAndWait() error {
	g := m.markLocked()
	m.mu.Unlock()
	return m.wait(g)
}

// lockUsable takes m.mu unless ctx ended or the journal failed (then
// m.mu is not held).
func (m *Memory) lockUsable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if err := m.errLocked(); err != nil {
		m.mu.Unlock()
		return err
	}
	return nil
}

// errLocked is the journal's failure (nil without a journal).
func (m *Memory) errLocked() error {
	if m.j == nil {
		return nil
	}
	return m.j.Err()
}

// durableLocked reports whether a result recorded in commit g may be
// handed out.
func (m *Memory) durableLocked(g uint64) bool {
	return m.j == nil || g <= m.j.Durable()
}

// finishedLocked returns a finished job the journal still keeps but the
// Memory no longer holds (a previous process's, within Retain).
func (m *Memory) finishedLocked(id string) (*memJob, bool) {
	if m.j == nil {
		return nil, false
	}
	r, ok := m.j.Finished(id)
	if !ok || r.State != StateDone || r.Result == nil || m.o.Now().Sub(r.DoneAt) >= m.o.Retain {
		return nil, false
	}
	return jobFromRecord(r), true
}
