package schedule

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/queue"
)

// Store keeps schedules and their pending fires. Every method is atomic
// on its own; Claim, Complete and Reclaim are what make a fire happen
// exactly once across processes (see the package doc).
type Store interface {
	// Create stores a schedule made by Prepare. ErrConflict if its id is
	// taken; ErrLimit if its chat has maxPerChat schedules already (0: no
	// limit), checked in the same atomic step.
	Create(ctx context.Context, s Schedule, maxPerChat int) error
	// Get returns one schedule; ErrNotFound if unknown.
	Get(ctx context.Context, id string) (Schedule, error)
	// List returns the schedules of chatID (0: all), by id.
	List(ctx context.Context, chatID int64) ([]Schedule, error)
	// SetEnabled pauses (enabled false: no next fire) or resumes (with the
	// next fire time next) a schedule; ErrNotFound if unknown.
	SetEnabled(ctx context.Context, id string, enabled bool, next time.Time) (Schedule, error)
	// Delete removes a schedule (its pending fires still complete);
	// ErrNotFound if unknown.
	Delete(ctx context.Context, id string) error
	// Due returns up to max enabled schedules whose next fire is at or
	// before now, earliest first.
	Due(ctx context.Context, now time.Time, max int) ([]Schedule, error)
	// Claim applies c atomically if the schedule is enabled and its next
	// fire is still c.Expected (else ErrConflict; ErrNotFound if gone).
	// With c.Job set it records a pending fire leased to c.Owner until
	// c.Now+c.Lease and returns it; a manual claim (c.Manual) does not
	// look at or move next.
	Claim(ctx context.Context, c Claim) (Fire, error)
	// Complete ends a pending fire held with f.Token: the fire is removed
	// and the schedule's last fire, status, job and counters are updated.
	// ErrConflict when the fire is gone or held by another token (its
	// lease expired and another process reclaimed it).
	Complete(ctx context.Context, f Fire, r FireResult) error
	// Reclaim takes over up to max pending fires whose lease ended by now,
	// giving each a new token and lease for owner.
	Reclaim(ctx context.Context, now time.Time, owner string, lease time.Duration, max int) ([]Fire, error)
	// Pending counts pending fires (claimed, not completed).
	Pending(ctx context.Context) (int, error)
	// Retry fires a one-shot again at next after its job at at failed: in
	// one atomic step, if the schedule is disabled, its last fire is at
	// and it has fired again fewer than max times, it is enabled with
	// next and Retries rises by one. ErrConflict otherwise (another
	// process retried it, or it was changed); ErrNotFound if gone.
	Retry(ctx context.Context, id string, at, next time.Time, max int) (Schedule, error)
	// Zone returns the chat's time zone ("" when none was set); SetZone
	// sets it ("" clears it). Callers validate the zone (LoadZone).
	Zone(ctx context.Context, chatID int64) (string, error)
	SetZone(ctx context.Context, chatID int64, tz string) error
}

// Claim is one compare-and-set on a schedule's next fire.
type Claim struct {
	ID string
	// Expected is the Next the caller read; the claim fails if it moved.
	Expected time.Time
	// Next is the schedule's new next fire (zero: none; the schedule is
	// disabled, as a one-shot is after its fire).
	Next time.Time
	// Manual: run now, outside the spec (Expected and Next unused).
	Manual bool
	// Job, when its IdempotencyKey is set, is the job to enqueue for this
	// fire (BuildJob); the pending fire keeps it. An empty Job advances
	// Next without firing and records Status (missed or inactive) and
	// Missed more misses.
	Job    queue.Job
	At     time.Time // the fire's scheduled time
	Status FireStatus
	// Error is a skipped fire's reason, recorded as the schedule's
	// LastError (a budget refusal says which cap and when it resets).
	Error  string
	Missed int64
	Owner  string
	Lease  time.Duration
	Now    time.Time
}

// Fire is a claimed fire not yet completed.
type Fire struct {
	ScheduleID string    `json:"schedule_id"`
	At         time.Time `json:"at"`
	Job        queue.Job `json:"job"`
	Owner      string    `json:"owner"`
	Token      string    `json:"token"`
	Deadline   time.Time `json:"deadline"`
	// Reclaimed counts takeovers after an expired lease.
	Reclaimed int `json:"reclaimed,omitempty"`
}

// FireResult is what Complete records.
type FireResult struct {
	JobID string
	// Err is the queue's refusal, if any (status failed).
	Err string
}

// FireKey is a fire's idempotency key: sched:<id>:<unix ms>:<flags>, flags
// g (goal), m (message), q (quiet) — so a worker or front end can tell a
// scheduled job (ParseFireKey). Only front ends and operators set
// idempotency keys; a chat user cannot forge one.
func FireKey(s Schedule, at time.Time) string {
	f := "g"
	if s.Kind == KindMessage {
		f = "m"
	}
	if s.Quiet {
		f += "q"
	}
	return "sched:" + s.ID + ":" + strconv.FormatInt(at.UnixMilli(), 10) + ":" + f
}

// FireInfo is what a job's idempotency key says about its schedule.
type FireInfo struct {
	ScheduleID string
	At         time.Time
	// Message: deliver the goal text as it is, no model call.
	Message bool
	// Quiet: deliver the answer only unless QuietSilent(answer).
	Quiet bool
}

// ParseFireKey reads a FireKey; ok is false for any other key.
func ParseFireKey(key string) (FireInfo, bool) {
	rest, ok := strings.CutPrefix(key, "sched:")
	if !ok {
		return FireInfo{}, false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 || !validID(parts[0]) {
		return FireInfo{}, false
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return FireInfo{}, false
	}
	fi := FireInfo{ScheduleID: parts[0], At: time.UnixMilli(ms).UTC()}
	switch parts[2] {
	case "g":
	case "gq":
		fi.Quiet = true
	case "m":
		fi.Message = true
	case "mq":
		fi.Message, fi.Quiet = true, true
	default:
		return FireInfo{}, false
	}
	return fi, true
}

// JobID is the id of the job of s's fire at: deterministic, so a fire
// enqueued twice is one job even after the queue's dedupe window.
func JobID(s Schedule, at time.Time) string {
	return "sched-" + s.ID + "-" + strconv.FormatInt(at.UnixMilli(), 10)
}

// BuildJob is the job of s's fire at: a pure function of both, so every
// process builds the same job (and the same payload) for one fire.
func BuildJob(s Schedule, at time.Time) queue.Job {
	at = at.UTC().Truncate(time.Millisecond)
	j := queue.Job{
		ID: JobID(s, at), ChatID: s.ChatID, UserID: s.UserID, Goal: s.Text,
		Budget: s.Budget, Model: s.Model, IdempotencyKey: FireKey(s, at), CreatedAt: at,
		Approved: append([]string(nil), s.Approve...),
	}
	if s.Kind == KindGoal && s.Quiet {
		j.Goal += quietSuffix
	}
	switch s.Session {
	case SessionChat:
		j.SessionID = s.SessionID
	default:
		j.SessionID = "sched:" + s.ID + ":" + strconv.FormatInt(at.UnixMilli(), 10)
	}
	return j
}

func fireField(id string, at time.Time) string {
	return id + "@" + strconv.FormatInt(at.UnixMilli(), 10)
}

func validateClaim(c Claim) error {
	if !validID(c.ID) {
		return invalid("id", "%q", clip(c.ID, 40))
	}
	if c.Job.IdempotencyKey != "" && (c.Owner == "" || c.Lease <= 0) {
		return fmt.Errorf("%w: claim: a fire needs an owner and a lease", ErrInvalid)
	}
	return nil
}
