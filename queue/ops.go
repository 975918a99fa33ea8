package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stats is a snapshot for operators (`odek queue stats`).
type Stats struct {
	// Queued counts every job waiting to run: ready ones, ones behind a
	// busy chat's running job, and suspects waiting for an idle worker.
	Queued int64
	// Ready counts jobs that may start now (head of their chat) and are not claimed.
	Ready int64
	// Suspects counts suspects waiting for an idle worker (see
	// Lease.Suspect); in Redis it may include jobs canceled meanwhile.
	Suspects int64
	// OldestQueued is the CreatedAt of the oldest queued job; zero when none.
	OldestQueued time.Time
	// Running counts claimed jobs, including ones whose lease expired and
	// that the next Claim scan will take over.
	Running int64
	// RunningBy counts Running jobs per consumer name.
	RunningBy map[string]int64
	// Dead counts dead-lettered jobs.
	Dead int64
	// Results counts results not yet acknowledged by a front end.
	Results int64
}

// Operator is implemented by both queues for the operator CLI.
type Operator interface {
	Stats(ctx context.Context) (Stats, error)
	// DeadLetters returns up to max dead jobs, oldest first (max <= 0: all).
	DeadLetters(ctx context.Context, max int64) ([]Job, error)
	// Retry moves a dead job back to the queue as a new job (new ID, same
	// chat, goal, session and budget) and returns it. ErrNotFound if no dead
	// job has that id.
	Retry(ctx context.Context, jobID string) (Job, error)
	// JobResult returns the result of a finished job without consuming it
	// from the results stream (`odek queue submit --wait`), for Retain
	// after the job finished. ok is false while the job is unfinished,
	// unknown or forgotten.
	JobResult(ctx context.Context, jobID string) (res Result, ok bool, err error)
}

// DeadLetterCounter is implemented by both queues: the number of jobs
// this queue value's Claim calls moved to the dead-letter stream since it
// was created (a worker's metric; other processes' moves are not counted).
type DeadLetterCounter interface {
	DeadLettered() uint64
	// Suspected counts the jobs this value's Claim calls found abandoned
	// by a dead worker and made suspects.
	Suspected() uint64
}

// DeadLettered implements DeadLetterCounter.
func (r *Redis) DeadLettered() uint64 { return r.deadLettered.Load() }

// Suspected implements DeadLetterCounter.
func (r *Redis) Suspected() uint64 { return r.suspected.Load() }

// Suspected implements DeadLetterCounter.
func (m *Memory) Suspected() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.suspected
}

// DeadLettered implements DeadLetterCounter.
func (m *Memory) DeadLettered() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadLettered
}

// SuspectWaiter is implemented by both queues: how long the oldest suspect
// has been waiting for an idle consumer, as this queue value last saw it
// from a busy consumer's Claim (0: none waiting). A worker that is never
// idle under steady load drains itself when this grows, so suspects do not
// starve.
type SuspectWaiter interface {
	SuspectWait() time.Duration
}

// SuspectWait implements SuspectWaiter.
func (m *Memory) SuspectWait() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range m.suspects {
		if j := m.jobs[id]; j != nil && j.state == stateSuspect {
			return max(m.o.Now().Sub(j.since), 0)
		}
	}
	return 0
}

// HeartbeatBatcher renews many leases at once; both queues implement it.
// The result for each lease is what Heartbeat would return.
type HeartbeatBatcher interface {
	HeartbeatBatch(ctx context.Context, ls []Lease) []error
}

// HeartbeatBatch implements HeartbeatBatcher.
func (m *Memory) HeartbeatBatch(ctx context.Context, ls []Lease) []error {
	errs := make([]error, len(ls))
	for i, l := range ls {
		errs[i] = m.Heartbeat(ctx, l)
	}
	return errs
}

var (
	_ SuspectWaiter     = (*Redis)(nil)
	_ SuspectWaiter     = (*Memory)(nil)
	_ HeartbeatBatcher  = (*Redis)(nil)
	_ HeartbeatBatcher  = (*Memory)(nil)
	_ DeadLetterCounter = (*Redis)(nil)
	_ DeadLetterCounter = (*Memory)(nil)
	_ Operator          = (*Redis)(nil)
	_ Operator          = (*Memory)(nil)
)

// retryJob is the new job Retry enqueues for a dead one.
func retryJob(dead Job) Job {
	return Job{ChatID: dead.ChatID, UserID: dead.UserID, Goal: dead.Goal, SessionID: dead.SessionID, Budget: dead.Budget}
}

// Stats implements Operator.
func (m *Memory) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{RunningBy: map[string]int64{}, Dead: int64(len(m.dead))}
	for _, j := range m.jobs {
		switch j.state {
		case stateQueued, stateReady, stateSuspect:
			s.Queued++
			if s.OldestQueued.IsZero() || j.job.CreatedAt.Before(s.OldestQueued) {
				s.OldestQueued = j.job.CreatedAt
			}
		}
		switch j.state {
		case stateReady:
			s.Ready++
		case stateSuspect:
			s.Suspects++
		case stateRunning:
			s.Running++
			s.RunningBy[j.consumer]++
		}
	}
	for _, r := range m.results {
		if !r.acked {
			s.Results++
		}
	}
	return s, nil
}

// DeadLetters implements Operator.
func (m *Memory) DeadLetters(ctx context.Context, max int64) ([]Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Job
	for _, d := range m.dead {
		if max > 0 && int64(len(out)) == max {
			break
		}
		out = append(out, d.Job)
	}
	return out, nil
}

// Retry implements Operator.
func (m *Memory) Retry(ctx context.Context, jobID string) (Job, error) {
	m.mu.Lock()
	idx := -1
	for i, d := range m.dead {
		if d.Job.ID == jobID {
			idx = i
		}
	}
	if idx < 0 {
		m.mu.Unlock()
		return Job{}, ErrNotFound
	}
	dead := m.dead[idx]
	m.dead = append(m.dead[:idx:idx], m.dead[idx+1:]...)
	m.recordLocked(Change{Kind: ChangeDeadGone, Key: dead.key})
	m.mu.Unlock()
	// The enqueue's commit holds the removal too: both are durable when
	// Retry returns.
	j, _, err := m.Enqueue(ctx, retryJob(dead.Job))
	if err != nil {
		m.mu.Lock()
		m.dead = append(m.dead, dead)
		m.recordLocked(Change{Kind: ChangeDead, Key: dead.key, Dead: &dead.DeadLetter})
		m.mu.Unlock()
		return Job{}, fmt.Errorf("queue: retry %s: %w", jobID, err)
	}
	return j, nil
}

// oldestScan bounds the jobs-stream entries Stats looks at for the oldest
// ready job.
const oldestScan = 64

// Stats implements Operator: XLEN ×3, XPENDING ×2, GET, XRANGE and LLEN
// in one pipeline, then one pipeline of HMGETs for the oldest ready job.
// Queued is the unfinished jobs (the <prefix>unfinished counter, kept by
// the enqueue and finish scripts) minus those held by a lease.
func (r *Redis) Stats(ctx context.Context) (Stats, error) {
	pipe := r.c.Pipeline()
	jobs := pipe.XLen(ctx, r.key("jobs"))
	dead := pipe.XLen(ctx, r.key("dead"))
	results := pipe.XLen(ctx, r.key("results"))
	pend := pipe.XPending(ctx, r.key("jobs"), r.o.Group)
	spend := pipe.XPending(ctx, r.key("suspects"), r.o.Group)
	unfinished := pipe.Get(ctx, r.key("unfinished"))
	oldest := pipe.XRangeN(ctx, r.key("jobs"), "-", "+", oldestScan)
	susp := pipe.LLen(ctx, r.key("suspect-queue"))
	if _, err := pipe.Exec(ctx); err != nil && !isNoGroup(err) && !errors.Is(err, redis.Nil) {
		return Stats{}, fmt.Errorf("queue: stats: %w", err)
	}
	s := Stats{RunningBy: map[string]int64{}, Dead: dead.Val(), Results: results.Val(), Suspects: susp.Val()}
	var jobsPending int64
	for i, p := range []*redis.XPendingCmd{pend, spend} {
		if p := p.Val(); p != nil {
			s.Running += p.Count
			if i == 0 {
				jobsPending = p.Count
			}
			for c, n := range p.Consumers {
				s.RunningBy[c] += n
			}
		}
	}
	n, _ := unfinished.Int64()
	s.Queued = max(n-s.Running, 0)
	// The ready job that has waited longest: the first entries of the jobs
	// stream not yet started (among the first oldestScan).
	if o := oldest.Val(); len(o) > 0 {
		pipe := r.c.Pipeline()
		states := make([]*redis.SliceCmd, len(o))
		for i, m := range o {
			id, _ := m.Values["id"].(string)
			states[i] = pipe.HMGet(ctx, r.key("job:", id), "state", "data")
		}
		_, _ = pipe.Exec(ctx)
		for _, c := range states {
			v := c.Val()
			if len(v) != 2 || v[0] != StateReady {
				continue
			}
			var j Job
			if data, _ := v[1].(string); json.Unmarshal([]byte(data), &j) == nil {
				s.OldestQueued = j.CreatedAt
			}
			break
		}
	}
	// Finished entries are deleted, so the stream holds ready + claimed jobs.
	s.Ready = max(jobs.Val()-jobsPending, 0)
	return s, nil
}

// Retry implements Operator: finds the job in the dead-letter stream,
// deletes the dead entry (whoever deletes it owns the retry, so operators
// retrying at the same moment requeue it once) and enqueues its copy. If
// the enqueue fails the entry is added back, at the end of the stream.
func (r *Redis) Retry(ctx context.Context, jobID string) (Job, error) {
	msgs, err := r.c.XRange(ctx, r.key("dead"), "-", "+").Result()
	if err != nil {
		return Job{}, fmt.Errorf("queue: retry %s: %w", jobID, err)
	}
	for _, m := range msgs {
		if m.Values["id"] != jobID {
			continue
		}
		data, _ := m.Values["data"].(string)
		var dead Job
		if err := json.Unmarshal([]byte(data), &dead); err != nil {
			return Job{}, fmt.Errorf("queue: retry %s: dead entry is corrupt: %w", jobID, err)
		}
		n, err := r.c.XDel(ctx, r.key("dead"), m.ID).Result()
		if err != nil {
			return Job{}, fmt.Errorf("queue: retry %s: %w", jobID, err)
		}
		if n == 0 {
			return Job{}, ErrNotFound // retried by someone else just now
		}
		j, _, err := r.Enqueue(ctx, retryJob(dead))
		if err != nil {
			if aerr := r.c.XAdd(context.WithoutCancel(ctx), &redis.XAddArgs{Stream: r.key("dead"), Values: m.Values}).Err(); aerr != nil {
				return Job{}, fmt.Errorf("queue: retry %s: %w; putting the dead entry back failed too (the job is lost): %v", jobID, err, aerr)
			}
			return Job{}, fmt.Errorf("queue: retry %s: %w", jobID, err)
		}
		return j, nil
	}
	return Job{}, ErrNotFound
}

// JobResult implements Operator.
func (m *Memory) JobResult(ctx context.Context, jobID string) (Result, bool, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[jobID]
	if j == nil {
		j, _ = m.finishedLocked(jobID)
	}
	if j == nil || j.state != stateDone {
		return Result{}, false, nil
	}
	res := j.result
	res.Artifacts = append([]ArtifactMeta(nil), res.Artifacts...)
	return res, true, nil
}

// JobResult implements Operator: one HGET.
func (r *Redis) JobResult(ctx context.Context, jobID string) (Result, bool, error) {
	if !validID(jobID) {
		return Result{}, false, nil
	}
	raw, err := r.c.HGet(ctx, r.key("job:", jobID), "result").Result()
	if errors.Is(err, redis.Nil) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("queue: result of %s: %w", jobID, err)
	}
	var res Result
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		return Result{}, false, fmt.Errorf("queue: stored result of %s is corrupt: %w", jobID, err)
	}
	return res, true, nil
}
