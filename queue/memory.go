package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Memory is the in-process Queue. It behaves as Redis does (see the
// package doc) but holds everything in memory: alone (NewMemory) a process
// exit loses queued jobs; with a Journal (NewJournaledMemory,
// RestoreMemory) every change is recorded and the steps it acknowledges
// are durable first. queue/embedded, odek-bot's embedded store, is a
// Memory with a bbolt journal. Safe for concurrent use.
type Memory struct {
	o     Options
	j     Journal       // nil: in memory only
	newID func() string // names jobs without an id

	mu        sync.Mutex
	wake      chan struct{} // closed and replaced on every change
	seq       uint64
	jobs      map[string]*memJob
	chats     map[string][]string // arrival order of unfinished jobs per chat lane (LaneKey)
	ready     []string            // runnable job ids, at most one per chat
	idem      map[string]memIdem
	dead      []memDead
	workers   map[string]memWorker
	results   []*memResult
	delivered map[string]time.Time // job id -> AckResult time
	progress  map[string]*memProgress
	running   map[string]*memJob // claimed jobs, scanned for expired leases
	held      map[string]int     // consumer -> number of running jobs it holds
	suspects  []string           // ids of jobs whose worker died, oldest first
	lastSweep time.Time
	approvals map[string]*memApproval
	grants    map[string]memGrant // approvalstate.go
	steer     map[string][]string // job id -> steer inbox (steer.go)
	// deadLettered counts jobs moved to the dead letters.
	deadLettered, suspected uint64
	// bb is the in-memory budget store (budgets_book.go), made on first use.
	bookOnce sync.Once
	bb       *BudgetBook
}

type jobState int

const (
	stateQueued  jobState = iota // waiting behind an earlier job of its chat
	stateReady                   // head of its chat, not claimed
	stateRunning                 // claimed, lease held
	stateSuspect                 // its worker died; waits for an idle consumer
	stateDone                    // result published
)

type memJob struct {
	job      Job
	enq      uint64 // enqueue order
	state    jobState
	seq      uint64 // entry sequence of the current ready/running spell
	attempt  int
	strikes  int  // deaths of its worker while it ran alone
	alone    bool // the current lease was handed out as a suspect
	token    string
	consumer string
	since    time.Time    // entered its current state
	history  []AttemptEnd // attempts whose lease expired
	beat     time.Time    // last claim or heartbeat
	canceled bool
	doneAt   time.Time
	result   Result // once done
}

type memIdem struct {
	id      string
	expires time.Time
}

type memDead struct {
	key uint64
	DeadLetter
}

type memResult struct {
	seq      uint64
	gen      uint64 // the journal's commit that holds it
	id       string
	at       time.Time
	res      Result
	readAt   time.Time
	read     bool
	acked    bool
	consumer string
	sent     Sent // the last RecordSent
}

type memProgress struct {
	next    uint64
	entries []Progress
	doneAt  time.Time
}

func newMemResult(seq uint64, res Result, at time.Time) *memResult {
	return &memResult{seq: seq, id: strconv.FormatUint(seq, 10), res: res, at: at}
}

// NewMemory returns an empty in-process queue.
func NewMemory(opts Options) *Memory {
	return &Memory{
		o:         opts.withDefaults(),
		newID:     newID,
		wake:      make(chan struct{}),
		jobs:      map[string]*memJob{},
		chats:     map[string][]string{},
		idem:      map[string]memIdem{},
		delivered: map[string]time.Time{},
		progress:  map[string]*memProgress{},
		running:   map[string]*memJob{},
		held:      map[string]int{},
	}
}

var _ Queue = (*Memory)(nil)

// newID returns 32 random hex digits.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("queue: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// notifyLocked wakes every waiter. m.mu must be held.
func (m *Memory) notifyLocked() {
	close(m.wake)
	m.wake = make(chan struct{})
}

// Enqueue implements Queue.
func (m *Memory) Enqueue(ctx context.Context, job Job) (Job, bool, error) {
	if err := ctx.Err(); err != nil {
		return job, false, err
	}
	ownID := job.ID != "" // a caller's id may name a job a previous process finished
	job, _, err := prepareJob(job, m.o, m.newID)
	if err != nil {
		return job, false, err
	}
	if err := m.lockUsable(ctx); err != nil {
		return job, false, err
	}
	now := m.o.Now()
	m.sweepLocked(now)
	if job.IdempotencyKey != "" {
		if e, ok := m.idem[job.IdempotencyKey]; ok && now.Before(e.expires) {
			prev := Job{ID: e.id, IdempotencyKey: job.IdempotencyKey}
			if p, ok := m.jobs[e.id]; ok {
				prev = p.job
			} else if p, ok := m.finishedLocked(e.id); ok {
				prev = p.job
			}
			// The first enqueue may not be durable yet: the duplicate
			// answers only once it is.
			return prev, true, m.unlockAndWait()
		}
	}
	exists := m.jobs[job.ID] != nil
	if !exists && ownID {
		_, exists = m.finishedLocked(job.ID)
	}
	if exists {
		m.mu.Unlock()
		return job, false, fmt.Errorf("%w: id %q already exists", ErrInvalidJob, job.ID)
	}
	if job.IdempotencyKey != "" {
		exp := now.Add(m.o.DedupeWindow)
		m.idem[job.IdempotencyKey] = memIdem{id: job.ID, expires: exp}
		m.recordLocked(Change{Kind: ChangeIdem, IdemKey: job.IdempotencyKey, JobID: job.ID, Expires: exp})
	}
	m.seq++
	j := &memJob{job: job, state: stateQueued, enq: m.seq}
	m.jobs[job.ID] = j
	lk := LaneKey(job.ChatID, job.Lane)
	m.chats[lk] = append(m.chats[lk], job.ID)
	if len(m.chats[lk]) == 1 {
		m.makeReadyLocked(j)
	}
	m.recordJobLocked(j)
	return job, false, m.unlockAndWait()
}

func (m *Memory) makeReadyLocked(j *memJob) {
	m.seq++
	j.seq = m.seq
	j.state = stateReady
	m.ready = append(m.ready, j.job.ID)
	m.notifyLocked()
}

// sweepLocked forgets finished jobs, markers and expired keys after Retain.
// It does the O(n) scan at most once a second.
func (m *Memory) sweepLocked(now time.Time) {
	if now.Sub(m.lastSweep) < time.Second {
		return
	}
	m.lastSweep = now
	for k, e := range m.idem {
		if !now.Before(e.expires) {
			delete(m.idem, k)
			m.recordLocked(Change{Kind: ChangeIdemGone, IdemKey: k})
		}
	}
	for id, j := range m.jobs {
		if j.state == stateDone && now.Sub(j.doneAt) >= m.o.Retain {
			delete(m.jobs, id) // a journal forgets its copy itself, after Retain
		}
	}
	for id, p := range m.progress {
		if !p.doneAt.IsZero() && now.Sub(p.doneAt) >= m.o.Retain {
			delete(m.progress, id)
		}
	}
	for id, t := range m.delivered {
		if now.Sub(t) >= m.o.Retain {
			delete(m.delivered, id)
		}
	}
	kept := m.results[:0]
	for _, r := range m.results {
		if !r.acked && now.Sub(r.at) < m.o.ResultsRetain {
			kept = append(kept, r)
		} else if !r.acked {
			m.recordLocked(Change{Kind: ChangeResultGone, Key: r.seq})
		}
	}
	m.results = kept
	m.trimDeadLocked(now, m.o.DeadRetain)
	if over := len(m.dead) - int(m.o.DeadMaxLen); over > 0 {
		for _, d := range m.dead[:over] {
			m.recordLocked(Change{Kind: ChangeDeadGone, Key: d.key})
		}
		m.dead = append(m.dead[:0:0], m.dead[over:]...)
	}
}

// trimDeadLocked drops dead letters older than age and returns how many.
func (m *Memory) trimDeadLocked(now time.Time, age time.Duration) int64 {
	kept := m.dead[:0]
	var n int64
	for _, d := range m.dead {
		if now.Sub(d.At) < age {
			kept = append(kept, d)
		} else {
			m.recordLocked(Change{Kind: ChangeDeadGone, Key: d.key})
			n++
		}
	}
	m.dead = kept
	return n
}

// finishLocked publishes res once, frees the job's chat and starts its next job.
func (m *Memory) finishLocked(j *memJob, res Result) {
	if j.state == stateDone {
		return
	}
	j.state, j.token, j.doneAt = stateDone, "", m.o.Now()
	j.since = j.doneAt
	j.result = res
	m.releaseLocked(j)
	if p := m.progress[j.job.ID]; p != nil {
		p.doneAt = j.doneAt
	}
	m.seq++
	r := newMemResult(m.seq, res, j.doneAt)
	m.results = append(m.results, r)
	m.recordLocked(Change{Kind: ChangeResult, Key: r.seq, JobID: j.job.ID})
	m.recordJobLocked(j)
	r.gen = m.markLocked()
	lk := LaneKey(j.job.ChatID, j.job.Lane)
	ids := m.chats[lk]
	for i, id := range ids {
		if id == j.job.ID {
			ids = append(ids[:i:i], ids[i+1:]...)
			break
		}
	}
	if len(ids) == 0 {
		delete(m.chats, lk)
	} else {
		m.chats[lk] = ids
		if head := m.jobs[ids[0]]; head.state == stateQueued {
			m.makeReadyLocked(head)
		}
	}
	m.notifyLocked()
}

// Claim implements Queue.
func (m *Memory) Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]Lease, error) {
	if max <= 0 {
		max = 1
	}
	return waitFor(ctx, m, block, func() []Lease { return m.claimLocked(consumer, max) })
}

func (m *Memory) claimLocked(consumer string, max int) []Lease {
	if m.errLocked() != nil {
		return nil
	}
	now := m.o.Now()
	var leases []Lease
	m.reclaimExpiredLocked(now, "lease expired: worker died or stalled")
	// A suspect goes only to a consumer that holds nothing, and alone.
	if m.held[consumer] == 0 {
		for len(m.suspects) > 0 {
			id := m.suspects[0]
			m.suspects = m.suspects[1:]
			j := m.jobs[id]
			if j == nil || j.state != stateSuspect {
				continue
			}
			j.alone = true
			l := m.leaseLocked(j, consumer, now)
			l.Suspect = true
			return []Lease{l}
		}
	}
	for len(leases) < max && len(m.ready) > 0 {
		id := m.ready[0]
		m.ready = m.ready[1:]
		j := m.jobs[id]
		if j == nil || j.state != stateReady {
			continue
		}
		if j.canceled {
			m.finishLocked(j, canceledResult(j.job, j.attempt))
			continue
		}
		leases = append(leases, m.leaseLocked(j, consumer, now))
	}
	return leases
}

// reclaimExpiredLocked handles every expired lease, oldest entry first: its
// worker died (or stalled past the lease), so the job is a suspect, or
// dead if it died alone MaxAttempts times, or canceled if a cancel waited.
func (m *Memory) reclaimExpiredLocked(now time.Time, why string) {
	var expired []*memJob
	for _, j := range m.running {
		if now.Sub(j.beat) >= m.o.LeaseTTL {
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
		j.history = append(j.history, AttemptEnd{Attempt: j.attempt, Worker: j.consumer, Reason: why + " (" + how + ")"})
		switch decideReclaim(j.strikes, m.o.MaxAttempts, j.canceled) {
		case reclaimCancel:
			m.finishLocked(j, canceledResult(j.job, j.attempt))
		case reclaimDead:
			dj := j.job
			dj.Attempt = j.attempt
			m.seq++
			d := memDead{key: m.seq, DeadLetter: DeadLetter{Job: dj, At: now, Strikes: j.strikes, History: append([]AttemptEnd(nil), j.history...)}}
			m.dead = append(m.dead, d)
			m.recordLocked(Change{Kind: ChangeDead, Key: d.key, Dead: &d.DeadLetter})
			m.deadLettered++
			m.finishLocked(j, deadResult(j.job, j.strikes, j.attempt, m.o.MaxAttempts))
		default:
			m.releaseLocked(j)
			j.state, j.token, j.alone, j.since = stateSuspect, "", false, now
			m.suspects = append(m.suspects, j.job.ID)
			m.suspected++
			m.recordJobLocked(j)
			m.notifyLocked()
		}
	}
}

func (m *Memory) leaseLocked(j *memJob, consumer string, now time.Time) Lease {
	j.attempt++
	j.state, j.token, j.beat, j.consumer, j.since = stateRunning, newID(), now, consumer, now
	m.running[j.job.ID] = j
	m.held[consumer]++
	// Recorded, not waited for: the record is in the next commit, long
	// before a job could kill the process, so a process-killing job is
	// still counted at the next start; a lease lost with a crash inside
	// that instant just runs again.
	m.recordJobLocked(j)
	job := j.job
	job.Attempt = j.attempt
	return Lease{Job: job, Consumer: consumer, entry: strconv.FormatUint(j.seq, 10), token: j.token}
}

// releaseLocked forgets j's lease, if it has one.
func (m *Memory) releaseLocked(j *memJob) {
	if _, ok := m.running[j.job.ID]; !ok {
		return
	}
	delete(m.running, j.job.ID)
	if m.held[j.consumer]--; m.held[j.consumer] <= 0 {
		delete(m.held, j.consumer)
	}
}

// owned returns the job if l still owns it. m.mu must be held.
func (m *Memory) ownedLocked(l Lease) *memJob {
	j := m.jobs[l.Job.ID]
	if j == nil || j.state != stateRunning || j.token != l.token {
		return nil
	}
	return j
}

// Heartbeat implements Queue.
func (m *Memory) Heartbeat(ctx context.Context, l Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.errLocked(); err != nil {
		return err
	}
	j := m.ownedLocked(l)
	if j == nil {
		return ErrLeaseLost
	}
	j.beat = m.o.Now() // not recorded: a restart reclaims every lease anyway
	if j.canceled {
		return ErrCanceled
	}
	return nil
}

// Ack implements Queue.
func (m *Memory) Ack(ctx context.Context, l Lease, res Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res, _, err := encodeResult(l, res, m.o)
	if err != nil {
		return err
	}
	if err := m.lockUsable(ctx); err != nil {
		return err
	}
	j := m.ownedLocked(l)
	if j == nil {
		m.mu.Unlock()
		return ErrLeaseLost
	}
	m.finishLocked(j, res)
	return m.unlockAndWait()
}

// Cancel implements Queue.
func (m *Memory) Cancel(ctx context.Context, jobID string) error {
	if err := m.lockUsable(ctx); err != nil {
		return err
	}
	j := m.jobs[jobID]
	if j == nil || j.state == stateDone {
		m.mu.Unlock()
		return ErrNotFound
	}
	switch j.state {
	case stateQueued, stateReady, stateSuspect:
		m.finishLocked(j, canceledResult(j.job, j.attempt))
	default:
		j.canceled = true
		m.recordJobLocked(j)
		m.notifyLocked()
	}
	return m.unlockAndWait()
}

// PublishProgress implements Queue.
func (m *Memory) PublishProgress(ctx context.Context, jobID string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(data) > m.o.MaxPayloadBytes {
		return &PayloadTooLargeError{What: "progress", Limit: m.o.MaxPayloadBytes, Size: len(data)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.progress[jobID]
	if p == nil {
		p = &memProgress{}
		m.progress[jobID] = p
	}
	p.next++
	p.entries = append(p.entries, Progress{ID: strconv.FormatUint(p.next, 10), Data: append([]byte(nil), data...)})
	if over := int64(len(p.entries)) - m.o.ProgressMaxLen; over > 0 {
		p.entries = append(p.entries[:0:0], p.entries[over:]...)
	}
	m.notifyLocked()
	return nil
}

// ReadProgress implements Queue.
func (m *Memory) ReadProgress(ctx context.Context, jobID, after string, max int, block time.Duration) ([]Progress, error) {
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("queue: progress id %q is not a Memory progress id", clip(after, 40))
		}
		from = n
	}
	if max <= 0 {
		max = 100
	}
	return waitFor(ctx, m, block, func() []Progress {
		p := m.progress[jobID]
		if p == nil {
			return nil
		}
		var out []Progress
		for _, e := range p.entries {
			if n, _ := strconv.ParseUint(e.ID, 10, 64); n > from && len(out) < max {
				out = append(out, Progress{ID: e.ID, Data: append([]byte(nil), e.Data...)})
			}
		}
		return out
	})
}

// ReadResults implements Queue.
func (m *Memory) ReadResults(ctx context.Context, consumer string, max int, block time.Duration) ([]Delivery, error) {
	if max <= 0 {
		max = 1
	}
	return waitFor(ctx, m, block, func() []Delivery {
		now := m.o.Now()
		var out []Delivery
		for _, r := range m.results {
			if len(out) == max {
				break
			}
			if r.acked || !m.durableLocked(r.gen) {
				continue // a chat never sees an answer a crash could take back
			}
			if _, ok := m.delivered[r.res.JobID]; ok {
				r.acked = true
				m.recordLocked(Change{Kind: ChangeResultGone, Key: r.seq})
				continue
			}
			if r.read && now.Sub(r.readAt) < m.o.ResultLeaseTTL {
				continue
			}
			r.read, r.readAt, r.consumer = true, now, consumer
			res := r.res
			res.Artifacts = append([]ArtifactMeta(nil), res.Artifacts...)
			out = append(out, Delivery{ID: r.id, Result: res, Sent: r.sent.clone()})
		}
		return out
	})
}

// AckResult implements Queue.
func (m *Memory) AckResult(ctx context.Context, d Delivery) error {
	if err := m.lockUsable(ctx); err != nil {
		return err
	}
	for _, r := range m.results {
		if r.id == d.ID && !r.acked {
			r.acked = true
			m.recordLocked(Change{Kind: ChangeResultGone, Key: r.seq})
		}
	}
	if _, ok := m.delivered[d.Result.JobID]; !ok {
		m.delivered[d.Result.JobID] = m.o.Now()
	}
	// Drop acknowledged results from the front of the list.
	i := 0
	for i < len(m.results) && m.results[i].acked {
		i++
	}
	m.results = m.results[i:]
	// Durable when it returns, so a restart does not send the answer again.
	return m.unlockAndWait()
}

// waitFor calls poll under m.mu until it returns something, block passes or
// ctx ends.
func waitFor[T any](ctx context.Context, m *Memory, block time.Duration, poll func() []T) ([]T, error) {
	var timer *time.Timer
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m.mu.Lock()
		if err := m.errLocked(); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		out := poll()
		wake := m.wake
		m.mu.Unlock()
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
