package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Inspector is implemented by both queues for the operator CLI (`odek
// queue show|dead|purge-dead|workers|tail`) and for workers announcing
// themselves.
type Inspector interface {
	// Inspect returns what the queue knows of one job; ok is false when
	// the job is unknown or forgotten (Retain after it finished).
	Inspect(ctx context.Context, jobID string) (info JobInfo, ok bool, err error)
	// DeadEntries returns up to max dead letters (max <= 0: all), oldest
	// first, with when and why each died.
	DeadEntries(ctx context.Context, max int64) ([]DeadLetter, error)
	// PurgeDead deletes the dead letters older than age and returns how
	// many it deleted.
	PurgeDead(ctx context.Context, age time.Duration) (int64, error)
	// RunningJobs returns the ids of jobs held by a lease now (expired or
	// not), at most max (max <= 0: all).
	RunningJobs(ctx context.Context, max int64) ([]string, error)
	// RegisterWorker records w as live for ttl (call it again before ttl
	// passes); UnregisterWorker forgets it at once.
	RegisterWorker(ctx context.Context, w WorkerInfo, ttl time.Duration) error
	UnregisterWorker(ctx context.Context, name string) error
	// Workers returns the live workers by name.
	Workers(ctx context.Context) ([]WorkerInfo, error)
}

var (
	_ Inspector = (*Redis)(nil)
	_ Inspector = (*Memory)(nil)
)

// Job states reported by Inspect.
const (
	StateQueued  = "queued"  // behind an earlier job of its chat
	StateReady   = "ready"   // the head of its chat, waiting for a worker
	StateRunning = "running" // held by a worker's lease
	StateSuspect = "suspect" // its worker died; waiting for an idle worker to run it alone
	StateDone    = "done"    // finished (Result says how)
	StateDead    = "dead"    // finished by dead-lettering
)

// AttemptEnd is why one attempt of a job ended without a result.
type AttemptEnd struct {
	Attempt int    `json:"attempt"`
	Worker  string `json:"worker,omitempty"`
	Reason  string `json:"reason"`
}

// JobInfo is Inspect's answer.
type JobInfo struct {
	Job   Job    `json:"job"`
	State string `json:"state"`
	// Worker is the consumer holding (or that last held) the lease.
	Worker string `json:"worker,omitempty"`
	// Since is when the job entered State (for running: when it was claimed).
	Since time.Time `json:"since,omitzero"`
	// LeaseLeft is the running lease's time before another worker may take
	// it over (negative: expired, waiting for the next scan).
	LeaseLeft time.Duration `json:"lease_left_ns,omitempty"`
	Attempt   int           `json:"attempt"`
	// Strikes counts the deaths of its worker while it ran alone.
	Strikes int `json:"strikes,omitempty"`
	// Suspect: the current or next run is alone because a worker died.
	Suspect bool `json:"suspect,omitempty"`
	// History lists the attempts that ended without a result.
	History []AttemptEnd `json:"history,omitempty"`
	// WaitingApproval is the id of an unanswered approval question the
	// job's run asked.
	WaitingApproval string  `json:"waiting_approval,omitempty"`
	Result          *Result `json:"result,omitempty"`
}

// DeadLetter is one entry of the dead-letter stream.
type DeadLetter struct {
	Job     Job          `json:"job"` // Attempt: claims in all
	At      time.Time    `json:"at"`
	Strikes int          `json:"strikes"`
	History []AttemptEnd `json:"history,omitempty"`
}

// WorkerInfo is a worker's announcement of itself.
type WorkerInfo struct {
	Name        string    `json:"name"`
	Version     string    `json:"version,omitempty"`
	Host        string    `json:"host,omitempty"`
	PID         int       `json:"pid,omitempty"`
	Concurrency int       `json:"concurrency"`
	Running     int64     `json:"running"`
	Started     time.Time `json:"started"`
	LastSeen    time.Time `json:"last_seen"`
}

// ---- Memory ----

type memWorker struct {
	info    WorkerInfo
	expires time.Time
}

// Inspect implements Inspector.
func (m *Memory) Inspect(ctx context.Context, jobID string) (JobInfo, bool, error) {
	if err := ctx.Err(); err != nil {
		return JobInfo{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[jobID]
	if j == nil {
		if j, _ = m.finishedLocked(jobID); j == nil {
			return JobInfo{}, false, nil
		}
	}
	info := JobInfo{Job: j.job, Worker: j.consumer, Since: j.since, Attempt: j.attempt, Strikes: j.strikes,
		History: append([]AttemptEnd(nil), j.history...)}
	info.Job.Attempt = j.attempt
	switch j.state {
	case stateQueued:
		info.State, info.Since = StateQueued, j.job.CreatedAt
	case stateReady:
		info.State, info.Since = StateReady, j.job.CreatedAt
	case stateSuspect:
		info.State, info.Suspect = StateSuspect, true
	case stateRunning:
		info.State, info.Suspect = StateRunning, j.alone
		info.LeaseLeft = m.o.LeaseTTL - m.o.Now().Sub(j.beat)
		for id, a := range m.approvals {
			if a.a.JobID == jobID && !a.settled && m.o.Now().Before(a.a.Deadline) {
				info.WaitingApproval = id
			}
		}
	case stateDone:
		res := j.result
		res.Artifacts = append([]ArtifactMeta(nil), res.Artifacts...)
		info.Result, info.State = &res, StateDone
		if res.Status == StatusDeadLettered {
			info.State = StateDead
		}
	}
	return info, true, nil
}

// DeadEntries implements Inspector.
func (m *Memory) DeadEntries(ctx context.Context, max int64) ([]DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]DeadLetter, 0, len(m.dead))
	for _, d := range m.dead {
		if max > 0 && int64(len(out)) == max {
			break
		}
		out = append(out, d.DeadLetter)
	}
	return out, nil
}

// PurgeDead implements Inspector.
func (m *Memory) PurgeDead(ctx context.Context, age time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	n := m.trimDeadLocked(m.o.Now(), age)
	return n, m.unlockAndWait()
}

// RunningJobs implements Inspector.
func (m *Memory) RunningJobs(ctx context.Context, max int64) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id := range m.running {
		out = append(out, id)
	}
	sort.Strings(out)
	if max > 0 && int64(len(out)) > max {
		out = out[:max]
	}
	return out, nil
}

// RegisterWorker implements Inspector.
func (m *Memory) RegisterWorker(ctx context.Context, w WorkerInfo, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers == nil {
		m.workers = map[string]memWorker{}
	}
	now := m.o.Now()
	w.LastSeen = now
	m.workers[w.Name] = memWorker{info: w, expires: now.Add(ttl)}
	return nil
}

// UnregisterWorker implements Inspector.
func (m *Memory) UnregisterWorker(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.workers, name)
	return nil
}

// Workers implements Inspector.
func (m *Memory) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Now()
	var out []WorkerInfo
	for n, w := range m.workers {
		if !now.Before(w.expires) {
			delete(m.workers, n)
			continue
		}
		out = append(out, w.info)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// ---- Redis ----

// Inspect implements Inspector: HGETALL, then for a running job one
// XPENDING (lease) and two GETs (approval).
func (r *Redis) Inspect(ctx context.Context, jobID string) (JobInfo, bool, error) {
	if !validID(jobID) {
		return JobInfo{}, false, nil
	}
	h, err := r.c.HGetAll(ctx, r.key("job:", jobID)).Result()
	if err != nil {
		return JobInfo{}, false, fmt.Errorf("queue: inspect %s: %w", jobID, err)
	}
	if len(h) == 0 {
		return JobInfo{}, false, nil
	}
	var info JobInfo
	if err := json.Unmarshal([]byte(h["data"]), &info.Job); err != nil {
		return JobInfo{}, false, fmt.Errorf("queue: stored job %s is corrupt: %w", jobID, err)
	}
	info.Attempt, _ = strconv.Atoi(h["attempt"])
	info.Job.Attempt = info.Attempt
	info.Strikes, _ = strconv.Atoi(h["strikes"])
	info.History = parseHistory(h["history"])
	if ms, err := strconv.ParseInt(h["since"], 10, 64); err == nil {
		info.Since = time.UnixMilli(ms).UTC()
	}
	info.State = h["state"]
	switch info.State {
	case StateQueued, StateReady:
		info.Since = info.Job.CreatedAt
	case StateSuspect:
		info.Suspect = true
	case StateRunning:
		info.Since = tokenTime(h["owner"])
		e := h["entry"]
		stream := r.key("jobs")
		if strings.HasPrefix(e, "s") { // a suspect's lease, in the suspects stream
			info.Suspect, stream, e = true, r.key("suspects"), e[1:]
		}
		if e != "" {
			p, err := r.c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: stream, Group: r.o.Group, Start: e, End: e, Count: 1}).Result()
			if err == nil && len(p) == 1 {
				info.LeaseLeft = r.o.LeaseTTL - p[0].Idle
				info.Worker = p[0].Consumer
			}
		}
		if aid, err := r.c.Get(ctx, r.key("asking:", jobID)).Result(); err == nil {
			if st, err := r.c.Get(ctx, r.key("approval:", aid)).Result(); err == nil && st == "pending" {
				info.WaitingApproval = aid
			}
		}
	case "done":
		info.Since = time.Time{} // the result's duration says when
		var res Result
		if err := json.Unmarshal([]byte(h["result"]), &res); err == nil {
			info.Result = &res
		}
		info.State = StateDone
		if info.Result != nil && info.Result.Status == StatusDeadLettered {
			info.State = StateDead
		}
	}
	return info, true, nil
}

// parseHistory reads the history field: one "attempt\tworker\treason" line
// per attempt that ended without a result.
func parseHistory(s string) []AttemptEnd {
	var out []AttemptEnd
	for _, line := range strings.Split(s, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			continue
		}
		n, _ := strconv.Atoi(f[0])
		out = append(out, AttemptEnd{Attempt: n, Worker: f[1], Reason: f[2]})
	}
	return out
}

// DeadEntries implements Inspector: one XRANGE.
func (r *Redis) DeadEntries(ctx context.Context, max int64) ([]DeadLetter, error) {
	if max <= 0 {
		max = 1 << 62
	}
	msgs, err := r.c.XRangeN(ctx, r.key("dead"), "-", "+", max).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: read dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		data, _ := m.Values["data"].(string)
		var d DeadLetter
		if json.Unmarshal([]byte(data), &d.Job) != nil {
			continue
		}
		d.Job.Attempt, _ = strconv.Atoi(fmt.Sprint(m.Values["attempt"]))
		d.Strikes, _ = strconv.Atoi(fmt.Sprint(m.Values["strikes"]))
		hist, _ := m.Values["history"].(string)
		d.History = parseHistory(hist)
		d.At = streamIDTime(m.ID)
		out = append(out, d)
	}
	return out, nil
}

// streamIDTime is the time part of a stream entry id ("<ms>-<seq>").
func streamIDTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// PurgeDead implements Inspector: one exact XTRIM MINID (entry ids carry
// the Redis server's time; age is measured on this machine's clock).
func (r *Redis) PurgeDead(ctx context.Context, age time.Duration) (int64, error) {
	minID := strconv.FormatInt(r.o.Now().Add(-age).UnixMilli(), 10) + "-0"
	n, err := r.c.XTrimMinID(ctx, r.key("dead"), minID).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: purge dead letters: %w", err)
	}
	return n, nil
}

// RunningJobs implements Inspector: XPENDING and XRANGE per entry on both
// streams.
func (r *Redis) RunningJobs(ctx context.Context, max int64) ([]string, error) {
	if max <= 0 {
		max = 10000
	}
	var out []string
	for _, s := range []string{r.key("jobs"), r.key("suspects")} {
		p, err := r.c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s, Group: r.o.Group, Start: "-", End: "+", Count: max}).Result()
		if err != nil && !isNoGroup(err) {
			return nil, fmt.Errorf("queue: list running jobs: %w", err)
		}
		pipe := r.c.Pipeline()
		cmds := make([]*redis.XMessageSliceCmd, len(p))
		for i, e := range p {
			cmds[i] = pipe.XRange(ctx, s, e.ID, e.ID)
		}
		if len(p) > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, fmt.Errorf("queue: list running jobs: %w", err)
			}
		}
		for _, c := range cmds {
			if ms := c.Val(); len(ms) == 1 {
				if id, ok := ms[0].Values["id"].(string); ok {
					out = append(out, id)
				}
			}
		}
	}
	if int64(len(out)) > max {
		out = out[:max]
	}
	return out, nil
}

// RegisterWorker implements Inspector: SET PX of the worker's JSON and
// ZADD of its name, in one pipeline.
func (r *Redis) RegisterWorker(ctx context.Context, w WorkerInfo, ttl time.Duration) error {
	w.LastSeen = r.o.Now().UTC()
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.key("worker:", w.Name), b, ttl)
		p.ZAdd(ctx, r.key("workers"), redis.Z{Score: float64(w.LastSeen.UnixMilli()), Member: w.Name})
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue: register worker %s: %w", w.Name, err)
	}
	return nil
}

// UnregisterWorker implements Inspector.
func (r *Redis) UnregisterWorker(ctx context.Context, name string) error {
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.key("worker:", name))
		p.ZRem(ctx, r.key("workers"), name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue: unregister worker %s: %w", name, err)
	}
	return nil
}

// Workers implements Inspector: ZRANGE and MGET; names whose key expired
// are removed from the set.
func (r *Redis) Workers(ctx context.Context) ([]WorkerInfo, error) {
	names, err := r.c.ZRange(ctx, r.key("workers"), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: list workers: %w", err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = r.key("worker:", n)
	}
	vals, err := r.c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("queue: list workers: %w", err)
	}
	var out []WorkerInfo
	var gone []any
	for i, v := range vals {
		s, ok := v.(string)
		var w WorkerInfo
		if !ok || json.Unmarshal([]byte(s), &w) != nil {
			gone = append(gone, names[i])
			continue
		}
		out = append(out, w)
	}
	if len(gone) > 0 {
		if err := r.c.ZRem(ctx, r.key("workers"), gone...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return out, fmt.Errorf("queue: list workers: %w", err)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}
