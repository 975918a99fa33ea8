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

	// BeforeTick, if set, runs at the start of every Tick (odek-bot's
	// embedded mode imports schedules `odek schedule` wrote to the file
	// store).
	BeforeTick func(ctx context.Context)

	// afterClaim, in tests, runs between claim and enqueue; returning
	// false abandons the fire there (a crash).
	afterClaim func(Fire) bool

	// BudgetLease is how long a fire's budget reservation holds without
	// a result (budget.go); 0 means DefaultBudgetLease.
	BudgetLease time.Duration

	stats RunnerStats
	once  sync.Once
	pc    policyCache // budget.go
}

// RunnerStats are a Runner's counters since it started.
type RunnerStats struct {
	Fired     atomic.Int64 // fires whose job this runner enqueued
	Missed    atomic.Int64 // fire times dropped (MissedSkip) or folded (MissedRunOnce)
	Inactive  atomic.Int64 // fires skipped outside active hours
	Busy      atomic.Int64 // quiet check-ins skipped while their chat had a job
	Late      atomic.Int64 // fires enqueued later than Grace after their time
	Conflicts atomic.Int64 // claims lost to another runner
	Reclaimed atomic.Int64 // pending fires taken over after their lease
	Failed    atomic.Int64 // fires the queue refused for good
	Budget    atomic.Int64 // goal fires skipped because the owner's budget was spent
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
	if r.BeforeTick != nil {
		r.BeforeTick(ctx)
	}
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
	// Until nothing is due (or a bounded number of rounds: a schedule that
	// stays due would otherwise hold the tick).
	for round := 0; round < maxRounds; round++ {
		now := r.Now()
		fires, err := r.Store.Reclaim(ctx, now, r.Name, r.Lease, r.Batch)
		keep(err)
		r.stats.Reclaimed.Add(int64(len(fires)))
		if len(fires) > 0 {
			n, err := r.finishAll(ctx, fires)
			keep(err)
			fired.Add(int64(n))
		}
		due, err := r.Store.Due(ctx, now, r.Batch)
		keep(err)
		// Replicas read the same due list: start at a random place so
		// they mostly claim different schedules.
		if len(due) > 1 {
			off := rand.IntN(len(due))
			due = append(due[off:], due[:off]...)
		}
		chunks := (len(due) + chunk - 1) / chunk
		r.parallel(chunks, func(i int) {
			n, err := r.fireAll(ctx, due[i*chunk:min((i+1)*chunk, len(due))], r.Now())
			keep(err)
			fired.Add(int64(n))
		})
		if len(due) == 0 && len(fires) == 0 || ctx.Err() != nil || len(errs) > 0 {
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

// maxRounds bounds the due reads of one Tick.
const maxRounds = 64

// chunk is how many due schedules one batch claims (one pipelined round
// trip on Redis) before their jobs are enqueued together.
const chunk = 32

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

// fireAll claims the due fires of ss (one batch: a pipelined round trip
// on a BatchStore), enqueues the jobs of the claims it won (concurrently,
// so the queue can share round trips) and completes them (one more
// batch). It returns how many jobs it enqueued. Losing a claim to another
// runner is not an error.
func (r *Runner) fireAll(ctx context.Context, ss []Schedule, now time.Time) (int, error) {
	var claims []Claim
	var decisions []Decision
	var sched []Schedule
	var verdicts []budgetVerdict
	type pending struct {
		s Schedule
		d Decision
	}
	var due []pending
	for _, s := range ss {
		if !s.Enabled || s.Next.IsZero() || s.Next.After(now) {
			continue // not due (yet): a stale read
		}
		sp, err := s.ParsedSpec()
		if err != nil {
			// A stored spec that no longer parses (zone database changed):
			// disable the schedule rather than retry it every tick.
			r.Log.WithError(err).WithField("schedule", s.ID).Error("schedule: stored spec does not parse; schedule disabled")
			claims = append(claims, Claim{ID: s.ID, Expected: s.Next, At: s.Next, Status: StatusFailed, Now: now})
			decisions = append(decisions, Decision{At: s.Next, Status: StatusFailed})
			sched, verdicts = append(sched, s), append(verdicts, budgetVerdict{})
			continue
		}
		d := Decide(s, sp, now, r.Grace)
		if d.Fire && s.Quiet && r.chatBusy(ctx, s.ChatID) {
			// A quiet check-in stays quiet while the chat is busy: the
			// chat is in a conversation already (issue 27, point 3).
			d.Fire, d.Status = false, StatusBusy
		}
		due = append(due, pending{s, d})
	}
	// budget.go: the owners' budgets, before the fires run (one batch).
	var fireAt []Schedule
	var ats []time.Time
	for _, p := range due {
		if p.d.Fire {
			fireAt, ats = append(fireAt, p.s), append(ats, p.d.At)
		}
	}
	bvs := r.reserveFires(ctx, fireAt, ats, now)
	k := 0
	for _, p := range due {
		s, d := p.s, p.d
		var bv budgetVerdict
		if d.Fire {
			bv = bvs[k]
			k++
			if bv.wait {
				if bv.err != nil {
					r.Log.WithError(bv.err).WithField("schedule", s.ID).Warn("schedule: the budget store failed; the fire waits")
				}
				continue // held by running jobs: due again at the next tick
			}
			if bv.refuse != "" {
				d.Fire, d.Status = false, StatusBudget
			}
		}
		c := Claim{ID: s.ID, Expected: s.Next, Next: d.Next, At: d.At, Status: d.Status, Missed: d.Missed, Owner: r.Name, Lease: r.Lease, Now: now, Error: bv.refuse}
		if d.Fire {
			c.Job = BuildJob(s, d.At)
			capJob(&c.Job, bv.grant)
		}
		claims = append(claims, c)
		decisions = append(decisions, d)
		sched = append(sched, s)
		verdicts = append(verdicts, bv)
	}
	if len(claims) == 0 {
		return 0, nil
	}
	fires, errs := claimAll(ctx, r.Store, claims)
	var won []Fire
	var firstErr error
	for i, err := range errs {
		d := decisions[i]
		switch {
		case errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound):
			r.stats.Conflicts.Add(1)
			continue
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		r.stats.Missed.Add(d.Missed)
		if !d.Fire {
			switch d.Status {
			case StatusInactive:
				r.stats.Inactive.Add(1)
			case StatusBusy:
				r.stats.Busy.Add(1)
			case StatusBudget:
				r.stats.Budget.Add(1)
				if sched[i].LastStatus != StatusBudget {
					r.tellBudget(ctx, sched[i], d.At, verdicts[i].grant, now) // once, not at every refused fire
				}
			}
			r.Log.WithFields(logrus.Fields{"schedule": claims[i].ID, "at": d.At, "status": d.Status, "missed": d.Missed}).Info("schedule: fire skipped")
			continue
		}
		if d.Late {
			r.stats.Late.Add(1)
		}
		won = append(won, fires[i])
	}
	n, err := r.finishAll(ctx, won)
	if firstErr == nil {
		firstErr = err
	}
	return n, firstErr
}

// finishAll enqueues the jobs of claimed fires and completes the fires.
// A transient queue error leaves a fire pending: its lease ends and a
// runner tries again with the same idempotency key.
func (r *Runner) finishAll(ctx context.Context, fires []Fire) (int, error) {
	if r.afterClaim != nil {
		kept := fires[:0]
		for _, f := range fires {
			if r.afterClaim(f) {
				kept = append(kept, f)
			}
		}
		fires = kept
	}
	return enqueueFires(ctx, r.Store, r.Queue, fires, r.Now, r.Log, r.Observe, &r.stats)
}

// claimAll claims cs in one batch when st can, else one by one.
func claimAll(ctx context.Context, st Store, cs []Claim) ([]Fire, []error) {
	if b, ok := st.(BatchStore); ok {
		return b.ClaimAll(ctx, cs)
	}
	fires, errs := make([]Fire, len(cs)), make([]error, len(cs))
	for i, c := range cs {
		fires[i], errs[i] = st.Claim(ctx, c)
	}
	return fires, errs
}

func completeAll(ctx context.Context, st Store, fs []Fire, rs []FireResult) []error {
	if b, ok := st.(BatchStore); ok {
		return b.CompleteAll(ctx, fs, rs)
	}
	errs := make([]error, len(fs))
	for i := range fs {
		errs[i] = st.Complete(ctx, fs[i], rs[i])
	}
	return errs
}

// BatchStore is a Store that claims and completes many fires in one round
// trip; the Runner uses it when the Store has it. Each element's result is
// the one Claim or Complete would give.
type BatchStore interface {
	ClaimAll(ctx context.Context, cs []Claim) ([]Fire, []error)
	CompleteAll(ctx context.Context, fs []Fire, rs []FireResult) []error
}

// enqueueFires enqueues the jobs of fires concurrently, then completes
// every fire whose job is in the queue (or that the queue refused for
// good) in one batch. It returns how many jobs are in the queue.
func enqueueFires(ctx context.Context, st Store, q Enqueuer, fires []Fire, now func() time.Time, log logrus.FieldLogger,
	observe func(Fire, time.Duration, bool), stats *RunnerStats) (int, error) {
	if len(fires) == 0 {
		return 0, nil
	}
	res := make([]FireResult, len(fires))
	dups := make([]bool, len(fires))
	errs := make([]error, len(fires))
	var wg sync.WaitGroup
	for i := range fires {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], dups[i], errs[i] = enqueueOne(ctx, q, fires[i])
		}()
	}
	wg.Wait()
	var done []Fire
	var doneRes []FireResult
	var idx []int
	var firstErr error
	for i, err := range errs {
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue // stays pending; retried after its lease
		}
		done, doneRes, idx = append(done, fires[i]), append(doneRes, res[i]), append(idx, i)
	}
	n := 0
	for k, err := range completeAll(ctx, st, done, doneRes) {
		if err != nil && !errors.Is(err, ErrConflict) {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		f, r, dup := done[k], doneRes[k], dups[idx[k]]
		if r.Err != "" {
			if stats != nil {
				stats.Failed.Add(1)
			}
			log.WithFields(logrus.Fields{"schedule": f.ScheduleID, "at": f.At}).Error("schedule: the queue refused the fire's job: " + r.Err)
			continue
		}
		n++
		lag := now().Sub(f.At)
		if stats != nil {
			stats.Fired.Add(1)
		}
		if observe != nil {
			observe(f, lag, dup)
		}
		log.WithFields(logrus.Fields{"schedule": f.ScheduleID, "at": f.At, "job_id": r.JobID, "lag_ms": lag.Milliseconds(), "dup": dup}).Info("schedule: fired")
	}
	return n, firstErr
}

// enqueueOne enqueues a fire's job. A nil error with r.Err set is a
// permanent refusal (complete the fire as failed); an error is transient.
func enqueueOne(ctx context.Context, q Enqueuer, f Fire) (r FireResult, dup bool, err error) {
	stored, dup, err := q.Enqueue(ctx, f.Job)
	switch {
	case err == nil:
		return FireResult{JobID: stored.ID}, dup, nil
	case errors.Is(err, queue.ErrInvalidJob) && strings.Contains(err.Error(), "already exists"):
		// The deterministic job id exists: an earlier attempt enqueued it
		// and the dedupe window has passed since.
		return FireResult{JobID: f.Job.ID}, true, nil
	case errors.Is(err, queue.ErrInvalidJob) || errors.Is(err, queue.ErrPayloadTooLarge):
		return FireResult{Err: err.Error()}, false, nil
	}
	return FireResult{}, false, err
}

// chatBusy reports whether the chat has unfinished jobs, when the queue
// can tell (queue.ChatBusy); false when it cannot or the question fails
// (the check-in then runs: it is only a courtesy).
func (r *Runner) chatBusy(ctx context.Context, chatID int64) bool {
	cb, ok := r.Queue.(queue.ChatBusy)
	if !ok {
		return false
	}
	busy, err := cb.ChatBusy(ctx, chatID)
	return err == nil && busy
}
