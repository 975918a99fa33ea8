package schedule

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// Enqueuer is the part of queue.Queue a Runner needs.
type Enqueuer interface {
	Enqueue(ctx context.Context, job queue.Job) (queue.Job, bool, error)
}

// Runner fires due schedules. Run one in every process that can reach the
// queue (odek worker, odek-bot): they share the work, and the Store's
// claim makes each fire happen once. The zero value of every field but
// Store and Queue is usable.
type Runner struct {
	Store Store
	Queue Enqueuer
	// Name owns this runner's pending fires (the worker's name); "" means
	// a random one.
	Name string
	// Interval is the time between two looks at the due schedules; 0
	// means 1 s.
	Interval time.Duration
	// Lease is how long a claimed fire may stay unfinished before another
	// runner takes it over; 0 means 30 s.
	Lease time.Duration
	// Grace is how late a fire may be and still run under MissedSkip; 0
	// means 1 min.
	Grace time.Duration
	// Batch is how many due schedules one look reads; 0 means 256.
	Batch int
	// Parallel is how many fires one runner handles at once; 0 means 4.
	Parallel int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets errors and fires; nil discards.
	Log logrus.FieldLogger
	// Observe, if set, is called after each fire's job was enqueued, with
	// the lag from the scheduled time (metrics, benchmarks).
	Observe func(f Fire, lag time.Duration, dup bool)

	// afterClaim, in tests, runs between claim and enqueue; returning
	// false abandons the fire there (a crash).
	afterClaim func(Fire) bool

	stats RunnerStats
	once  sync.Once
}

// RunnerStats are a Runner's counters since it started.
type RunnerStats struct {
	Fired     atomic.Int64 // fires whose job this runner enqueued
	Missed    atomic.Int64 // fire times dropped (MissedSkip) or folded (MissedRunOnce)
	Inactive  atomic.Int64 // fires skipped outside active hours
	Late      atomic.Int64 // fires enqueued later than Grace after their time
	Conflicts atomic.Int64 // claims lost to another runner
	Reclaimed atomic.Int64 // pending fires taken over after their lease
	Failed    atomic.Int64 // fires the queue refused for good
}

// Stats returns the runner's counters.
func (r *Runner) Stats() *RunnerStats { return &r.stats }

func (r *Runner) init() {
	r.once.Do(func() {
		if r.Name == "" {
			r.Name = "runner-" + newID()
		}
		if r.Interval <= 0 {
			r.Interval = time.Second
		}
		if r.Lease <= 0 {
			r.Lease = 30 * time.Second
		}
		if r.Grace <= 0 {
			r.Grace = time.Minute
		}
		if r.Batch <= 0 {
			r.Batch = 256
		}
		if r.Parallel <= 0 {
			r.Parallel = 4
		}
		if r.Now == nil {
			r.Now = time.Now
		}
		if r.Log == nil {
			l := logrus.New()
			l.SetOutput(discard{})
			r.Log = l
		}
	})
}

func (r *Runner) logger() logrus.FieldLogger {
	r.init()
	return r.Log
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Run fires due schedules every Interval until ctx ends. Errors (Redis
// down) are logged and retried on the next tick.
func (r *Runner) Run(ctx context.Context) error {
	r.init()
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if _, err := r.Tick(ctx); err != nil && ctx.Err() == nil {
			r.Log.WithError(err).Warn("schedule: firing loop")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick takes over pending fires whose lease ended, then fires every due
// schedule, and returns how many jobs it enqueued.
func (r *Runner) Tick(ctx context.Context) (int, error) {
	r.init()
	var fired atomic.Int64
	var errs []error
	var emu sync.Mutex
	keep := func(err error) {
		if err != nil {
			emu.Lock()
			errs = append(errs, err)
			emu.Unlock()
		}
	}
	for {
		now := r.Now()
		fires, err := r.Store.Reclaim(ctx, now, r.Name, r.Lease, r.Batch)
		keep(err)
		r.stats.Reclaimed.Add(int64(len(fires)))
		r.parallel(len(fires), func(i int) {
			ok, err := r.finish(ctx, fires[i])
			keep(err)
			if ok {
				fired.Add(1)
			}
		})
		due, err := r.Store.Due(ctx, now, r.Batch)
		keep(err)
		// Replicas read the same due list: start at a random place so
		// they mostly claim different schedules.
		if len(due) > 1 {
			off := rand.IntN(len(due))
			due = append(due[off:], due[:off]...)
		}
		r.parallel(len(due), func(i int) {
			ok, err := r.fire(ctx, due[i], r.Now())
			keep(err)
			if ok {
				fired.Add(1)
			}
		})
		if len(due) < r.Batch || ctx.Err() != nil || len(errs) > 0 {
			break
		}
	}
	return int(fired.Load()), errors.Join(errs...)
}

func (r *Runner) parallel(n int, f func(i int)) {
	if n == 0 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(r.Parallel, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// Decision is what a due schedule's claim does (Decide).
type Decision struct {
	// Fire: enqueue a job for At. Else Status says why not.
	Fire   bool
	At     time.Time
	Next   time.Time
	Status FireStatus
	// Missed counts fire times dropped or folded into this one.
	Missed int64
	// Late: At is more than the grace before now.
	Late bool
}

// maxCount bounds the fire times counted between two fires.
const maxCount = 100000

// Decide is the firing rule, a pure function: s is due (s.Next <= now).
// Next becomes the first fire time after now. Fire times between s.Next
// and now beyond the first are missed. The first fires unless it is more
// than grace late under MissedSkip, or falls outside the active hours.
func Decide(s Schedule, sp Spec, now time.Time, grace time.Duration) Decision {
	at := s.Next
	from := now
	if from.Before(at) {
		from = at // never a next at or before this fire
	}
	d := Decision{At: at, Next: sp.Next(from, s.Anchor)}
	// Fire times in (at, now] are folded into this one, or dropped.
	switch sp.Kind {
	case KindEvery:
		if now.After(at) && sp.Every > 0 {
			d.Missed = int64(now.Sub(at) / sp.Every)
		}
	case KindCron:
		for t := sp.Next(at, s.Anchor); !t.IsZero() && !t.After(now) && d.Missed < maxCount; t = sp.Next(t, s.Anchor) {
			d.Missed++
		}
	}
	d.Late = now.Sub(at) > grace
	switch {
	case d.Late && s.Missed != MissedRunOnce:
		d.Missed++
		d.Status = StatusMissed
	case !s.Active(at):
		d.Status = StatusInactive
	default:
		d.Fire = true
	}
	return d
}

// fire claims s's due fire and enqueues it. It reports whether it
// enqueued a job. Losing the claim to another runner is not an error.
func (r *Runner) fire(ctx context.Context, s Schedule, now time.Time) (bool, error) {
	if !s.Enabled || s.Next.IsZero() || s.Next.After(now) {
		return false, nil // not due (yet): a caller's stale read
	}
	sp, err := s.ParsedSpec()
	if err != nil {
		// A stored spec that no longer parses (zone database changed):
		// disable the schedule rather than retry it every tick.
		_, cerr := r.Store.Claim(ctx, Claim{ID: s.ID, Expected: s.Next, At: s.Next, Status: StatusFailed, Now: now})
		r.Log.WithError(err).WithField("schedule", s.ID).Error("schedule: stored spec does not parse; schedule disabled")
		if errors.Is(cerr, ErrConflict) || errors.Is(cerr, ErrNotFound) {
			cerr = nil
		}
		return false, cerr
	}
	d := Decide(s, sp, now, r.Grace)
	c := Claim{ID: s.ID, Expected: s.Next, Next: d.Next, At: d.At, Status: d.Status, Missed: d.Missed, Owner: r.Name, Lease: r.Lease, Now: now}
	if d.Fire {
		c.Job = BuildJob(s, d.At)
	}
	f, err := r.Store.Claim(ctx, c)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		r.stats.Conflicts.Add(1)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.stats.Missed.Add(d.Missed)
	if !d.Fire {
		if d.Status == StatusInactive {
			r.stats.Inactive.Add(1)
		}
		r.Log.WithFields(logrus.Fields{"schedule": s.ID, "at": d.At, "status": d.Status, "missed": d.Missed}).Info("schedule: fire skipped")
		return false, nil
	}
	if d.Late {
		r.stats.Late.Add(1)
	}
	return r.finish(ctx, f)
}

// finish enqueues a claimed fire's job and completes the fire. A
// transient queue error leaves the fire pending: its lease ends and a
// runner tries again with the same idempotency key.
func (r *Runner) finish(ctx context.Context, f Fire) (bool, error) {
	if r.afterClaim != nil && !r.afterClaim(f) {
		return false, nil
	}
	return enqueueFire(ctx, r.Store, r.Queue, f, r.Now, r.Log, r.Observe, &r.stats)
}

func enqueueFire(ctx context.Context, st Store, q Enqueuer, f Fire, now func() time.Time, log logrus.FieldLogger,
	observe func(Fire, time.Duration, bool), stats *RunnerStats) (bool, error) {
	stored, dup, err := q.Enqueue(ctx, f.Job)
	res := FireResult{JobID: stored.ID}
	switch {
	case err == nil:
	case errors.Is(err, queue.ErrInvalidJob) && strings.Contains(err.Error(), "already exists"):
		// The deterministic job id exists: an earlier attempt enqueued it
		// and the dedupe window has passed since.
		res.JobID, dup = f.Job.ID, true
	case errors.Is(err, queue.ErrInvalidJob) || errors.Is(err, queue.ErrPayloadTooLarge):
		res.Err = err.Error()
		if stats != nil {
			stats.Failed.Add(1)
		}
	default:
		return false, err
	}
	if err := st.Complete(ctx, f, res); err != nil && !errors.Is(err, ErrConflict) {
		return false, err
	}
	if res.Err != "" {
		log.WithFields(logrus.Fields{"schedule": f.ScheduleID, "at": f.At}).Error("schedule: the queue refused the fire's job: " + res.Err)
		return false, nil
	}
	lag := now().Sub(f.At)
	if stats != nil {
		stats.Fired.Add(1)
	}
	if observe != nil {
		observe(f, lag, dup)
	}
	log.WithFields(logrus.Fields{"schedule": f.ScheduleID, "at": f.At, "job_id": res.JobID, "lag_ms": lag.Milliseconds(), "dup": dup}).Info("schedule: fired")
	return true, nil
}
