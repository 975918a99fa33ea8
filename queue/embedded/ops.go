package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/queue"
)

var (
	_ queue.Operator          = (*Store)(nil)
	_ queue.Inspector         = (*Store)(nil)
	_ queue.Approvals         = (*Store)(nil)
	_ queue.ProgressBatcher   = (*Store)(nil)
	_ queue.HeartbeatBatcher  = (*Store)(nil)
	_ queue.DeadLetterCounter = (*Store)(nil)
	_ queue.SuspectWaiter     = (*Store)(nil)
)

// DeadLettered implements queue.DeadLetterCounter.
func (s *Store) DeadLettered() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadLettered
}

// Suspected implements queue.DeadLetterCounter.
func (s *Store) Suspected() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.suspected
}

// Commits is how many transactions the store has committed (each one
// fsync): jobs per commit is a benchmark figure of the group commit.
func (s *Store) Commits() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}

// SuspectWait implements queue.SuspectWaiter.
func (s *Store) SuspectWait() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.suspects {
		if j := s.jobs[id]; j != nil && j.state == stateSuspect {
			return max(s.o.Now().Sub(j.since), 0)
		}
	}
	return 0
}

// Stats implements queue.Operator.
func (s *Store) Stats(ctx context.Context) (queue.Stats, error) {
	if err := ctx.Err(); err != nil {
		return queue.Stats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := queue.Stats{RunningBy: map[string]int64{}, Dead: int64(len(s.dead))}
	for _, j := range s.jobs {
		switch j.state {
		case stateQueued, stateReady, stateSuspect:
			st.Queued++
			if st.OldestQueued.IsZero() || j.job.CreatedAt.Before(st.OldestQueued) {
				st.OldestQueued = j.job.CreatedAt
			}
		}
		switch j.state {
		case stateReady:
			st.Ready++
		case stateSuspect:
			st.Suspects++
		case stateRunning:
			st.Running++
			st.RunningBy[j.consumer]++
		}
	}
	for _, r := range s.results {
		if !r.acked {
			st.Results++
		}
	}
	return st, nil
}

// DeadLetters implements queue.Operator.
func (s *Store) DeadLetters(ctx context.Context, max int64) ([]queue.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []queue.Job
	for _, d := range s.dead {
		if max > 0 && int64(len(out)) == max {
			break
		}
		out = append(out, d.dl.Job)
	}
	return out, nil
}

// Retry implements queue.Operator: the dead entry is removed and its copy
// enqueued; both changes are durable together when Retry returns.
func (s *Store) Retry(ctx context.Context, jobID string) (queue.Job, error) {
	s.mu.Lock()
	idx := -1
	for i, d := range s.dead {
		if d.dl.Job.ID == jobID {
			idx = i
		}
	}
	if idx < 0 {
		s.mu.Unlock()
		return queue.Job{}, queue.ErrNotFound
	}
	dead := s.dead[idx]
	s.dead = append(s.dead[:idx:idx], s.dead[idx+1:]...)
	s.pending.del(bDead, be64(dead.key))
	s.mu.Unlock()
	j, _, err := s.Enqueue(ctx, queue.RetryJob(dead.dl.Job))
	if err != nil {
		s.mu.Lock()
		s.dead = append(s.dead, dead)
		v, _ := json.Marshal(dead.dl)
		s.pending.put(bDead, be64(dead.key), v)
		s.kickLocked()
		s.mu.Unlock()
		return queue.Job{}, fmt.Errorf("embedded store: retry %s: %w", jobID, err)
	}
	return j, nil
}

// JobResult implements queue.Operator.
func (s *Store) JobResult(ctx context.Context, jobID string) (queue.Result, bool, error) {
	if err := ctx.Err(); err != nil {
		return queue.Result{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[jobID]
	if j == nil {
		if r, ok := s.diskJob(jobID); ok {
			return *r.Result, true, nil
		}
		return queue.Result{}, false, nil
	}
	if j.state != stateDone {
		return queue.Result{}, false, nil
	}
	res := j.result
	res.Artifacts = append([]queue.ArtifactMeta(nil), res.Artifacts...)
	return res, true, nil
}

// Inspect implements queue.Inspector.
func (s *Store) Inspect(ctx context.Context, jobID string) (queue.JobInfo, bool, error) {
	if err := ctx.Err(); err != nil {
		return queue.JobInfo{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[jobID]
	if j == nil {
		r, ok := s.diskJob(jobID)
		if !ok {
			return queue.JobInfo{}, false, nil
		}
		j = fromRec(r)
	}
	info := queue.JobInfo{Job: j.job, Worker: j.consumer, Since: j.since, Attempt: j.attempt, Strikes: j.strikes,
		History: append([]queue.AttemptEnd(nil), j.history...)}
	info.Job.Attempt = j.attempt
	switch j.state {
	case stateQueued:
		info.State, info.Since = queue.StateQueued, j.job.CreatedAt
	case stateReady:
		info.State, info.Since = queue.StateReady, j.job.CreatedAt
	case stateSuspect:
		info.State, info.Suspect = queue.StateSuspect, true
	case stateRunning:
		info.State, info.Suspect = queue.StateRunning, j.alone
		info.LeaseLeft = s.o.LeaseTTL - s.o.Now().Sub(j.beat)
		for id, a := range s.approvals {
			if a.a.JobID == jobID && !a.settled && s.o.Now().Before(a.a.Deadline) {
				info.WaitingApproval = id
			}
		}
	case stateDone:
		res := j.result
		res.Artifacts = append([]queue.ArtifactMeta(nil), res.Artifacts...)
		info.Result, info.State = &res, queue.StateDone
		if res.Status == queue.StatusDeadLettered {
			info.State = queue.StateDead
		}
	}
	return info, true, nil
}

// DeadEntries implements queue.Inspector.
func (s *Store) DeadEntries(ctx context.Context, max int64) ([]queue.DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]queue.DeadLetter, 0, len(s.dead))
	for _, d := range s.dead {
		if max > 0 && int64(len(out)) == max {
			break
		}
		out = append(out, d.dl)
	}
	return out, nil
}

// PurgeDead implements queue.Inspector; durable when it returns.
func (s *Store) PurgeDead(ctx context.Context, age time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	n := s.trimDeadLocked(s.o.Now(), age)
	g := s.genLocked()
	s.mu.Unlock()
	return n, s.durable(g)
}

// RunningJobs implements queue.Inspector.
func (s *Store) RunningJobs(ctx context.Context, max int64) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.running {
		out = append(out, id)
	}
	sort.Strings(out)
	if max > 0 && int64(len(out)) > max {
		out = out[:max]
	}
	return out, nil
}

// RegisterWorker implements queue.Inspector (in memory: workers live in
// this process).
func (s *Store) RegisterWorker(ctx context.Context, w queue.WorkerInfo, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	w.LastSeen = now
	s.workers[w.Name] = worker{info: w, expires: now.Add(ttl)}
	return nil
}

// UnregisterWorker implements queue.Inspector.
func (s *Store) UnregisterWorker(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.workers, name)
	return nil
}

// Workers implements queue.Inspector.
func (s *Store) Workers(ctx context.Context) ([]queue.WorkerInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	var out []queue.WorkerInfo
	for n, w := range s.workers {
		if !now.Before(w.expires) {
			delete(s.workers, n)
			continue
		}
		out = append(out, w.info)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// ---- approvals (in memory: the asking run dies with the process, and an
// unanswered question denies) ----

// Ask implements queue.Approvals.
func (s *Store) Ask(ctx context.Context, a queue.Approval) (queue.Approval, error) {
	if err := ctx.Err(); err != nil {
		return a, err
	}
	a.ID = newID()
	if a.JobID == "" || len(a.JobID) > queue.MaxIDLen {
		return a, fmt.Errorf("%w: approval job_id %q", queue.ErrInvalidJob, clip(a.JobID, 40))
	}
	if _, err := queue.PrepareJob(queue.Job{ID: a.JobID, ChatID: 1, Goal: "-"}, s.o); err != nil {
		return a, fmt.Errorf("%w: approval job_id %q", queue.ErrInvalidJob, clip(a.JobID, 40))
	}
	if a.Question == "" || !utf8.ValidString(a.Question) {
		return a, fmt.Errorf("%w: approval question must be non-empty UTF-8", queue.ErrInvalidJob)
	}
	if len(a.Question) > queue.MaxQuestionBytes {
		return a, &queue.PayloadTooLargeError{What: "approval question", Limit: queue.MaxQuestionBytes, Size: len(a.Question)}
	}
	now := s.o.Now()
	if a.Deadline.IsZero() {
		a.Deadline = now.Add(queue.DefaultApprovalTimeout)
	}
	a.Deadline = a.Deadline.UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, p := range s.approvals {
		if now.Sub(p.a.Deadline) > time.Minute {
			delete(s.approvals, id)
		}
	}
	s.approvals[a.ID] = &approval{a: a, answer: make(chan bool, 1)}
	s.notifyLocked()
	return a, nil
}

// AwaitAnswer implements queue.Approvals.
func (s *Store) AwaitAnswer(ctx context.Context, id string, block time.Duration) (bool, bool, error) {
	s.mu.Lock()
	p := s.approvals[id]
	s.mu.Unlock()
	if p == nil {
		return false, false, queue.ErrNotFound
	}
	t := time.NewTimer(max(block, 0))
	defer t.Stop()
	select {
	case v := <-p.answer:
		return v, true, nil
	case <-t.C:
		return false, false, nil
	case <-ctx.Done():
		return false, false, ctx.Err()
	}
}

// ReadApprovals implements queue.Approvals.
func (s *Store) ReadApprovals(ctx context.Context, consumer string, max int, block time.Duration) ([]queue.Approval, error) {
	if max <= 0 {
		max = 1
	}
	return waitFor(ctx, s, block, func() []queue.Approval {
		now := s.o.Now()
		var out []queue.Approval
		for _, p := range s.approvals {
			if len(out) < max && !p.read && now.Before(p.a.Deadline) {
				p.read = true
				out = append(out, p.a)
			}
		}
		return out
	})
}

// Answer implements queue.Approvals.
func (s *Store) Answer(ctx context.Context, id string, allow bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.approvals[id]
	if p == nil || p.settled || !s.o.Now().Before(p.a.Deadline) {
		return queue.ErrNotFound
	}
	p.settled = true
	p.answer <- allow
	return nil
}
