package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Owner is who asks the Service: a chat member, or an operator.
type Owner struct {
	ChatID int64
	UserID int64
	// Admin may change any schedule of the chat (a chat admin), not only
	// the ones they made.
	Admin bool
	// Operator (the CLI) may act on every chat's schedules.
	Operator bool
}

// Service is the front ends' API (the chat core's /schedule, /remind and
// the CLI): create, list, pause, resume, delete and run now, each checked
// against the asking Owner. It holds no Telegram types.
type Service struct {
	Store  Store
	Queue  Enqueuer // for RunNow
	Limits Limits
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Lease of a run-now fire; 0 means 30 s.
	Lease time.Duration
}

func (sv *Service) now() time.Time {
	if sv.Now != nil {
		return sv.Now()
	}
	return time.Now()
}

// Create makes a schedule for o's chat: the chat and user are o's, not
// the ones in s. It enforces Limits (text size, shortest interval, count
// per chat).
func (sv *Service) Create(ctx context.Context, o Owner, s Schedule) (Schedule, error) {
	if !o.Operator {
		s.ChatID, s.UserID = o.ChatID, o.UserID
	}
	s.ID = ""
	now := sv.now()
	s, sp, err := Prepare(s, sv.Limits, now)
	if err != nil {
		return s, err
	}
	if !o.Operator {
		if err := sv.checkQuota(ctx, s, sp, now); err != nil {
			return s, err
		}
	}
	if err := sv.Store.Create(ctx, s, sv.Limits.withDefaults().MaxPerChat); err != nil {
		return s, err
	}
	return s, nil
}

// List returns o's chat's schedules (an operator with ChatID 0: all).
func (sv *Service) List(ctx context.Context, o Owner) ([]Schedule, error) {
	if !o.Operator && o.ChatID == 0 {
		return nil, fmt.Errorf("%w: no chat", ErrForbidden)
	}
	return sv.Store.List(ctx, o.ChatID)
}

// Get returns one schedule o may see.
func (sv *Service) Get(ctx context.Context, o Owner, id string) (Schedule, error) {
	s, err := sv.Store.Get(ctx, id)
	if err != nil {
		return s, err
	}
	if !o.Operator && s.ChatID != o.ChatID {
		// Another chat's schedule is as good as unknown.
		return Schedule{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return s, nil
}

// mayChange is the owner check for changes: the operator, the schedule's
// maker, or a chat admin of its chat.
func mayChange(o Owner, s Schedule) error {
	if o.Operator || (s.ChatID == o.ChatID && (o.Admin || s.UserID == 0 || s.UserID == o.UserID)) {
		return nil
	}
	return fmt.Errorf("%w: schedule %s was made by another member of the chat", ErrForbidden, s.ID)
}

func (sv *Service) changeable(ctx context.Context, o Owner, id string) (Schedule, error) {
	s, err := sv.Get(ctx, o, id)
	if err != nil {
		return s, err
	}
	return s, mayChange(o, s)
}

// Pause stops a schedule's fires until Resume.
func (sv *Service) Pause(ctx context.Context, o Owner, id string) (Schedule, error) {
	if _, err := sv.changeable(ctx, o, id); err != nil {
		return Schedule{}, err
	}
	return sv.Store.SetEnabled(ctx, id, false, time.Time{})
}

// Resume starts a paused schedule again at its next time after now (fires
// missed while paused are not made up). A one-shot whose time passed
// cannot resume.
func (sv *Service) Resume(ctx context.Context, o Owner, id string) (Schedule, error) {
	s, err := sv.changeable(ctx, o, id)
	if err != nil {
		return s, err
	}
	sp, err := s.ParsedSpec()
	if err != nil {
		return s, err
	}
	next := sp.Next(sv.now(), s.Anchor)
	if next.IsZero() {
		return s, fmt.Errorf("%w: schedule %s (%s) has no fire time left", ErrInvalid, s.ID, s.Spec)
	}
	return sv.Store.SetEnabled(ctx, id, true, next)
}

// Delete removes a schedule. A fire already claimed still completes.
func (sv *Service) Delete(ctx context.Context, o Owner, id string) error {
	if _, err := sv.changeable(ctx, o, id); err != nil {
		return err
	}
	return sv.Store.Delete(ctx, id)
}

// RunNow fires a schedule at once, outside its spec (its next fire stays),
// through the same claim as a timed fire, and returns the job id.
func (sv *Service) RunNow(ctx context.Context, o Owner, id string) (string, error) {
	s, err := sv.changeable(ctx, o, id)
	if err != nil {
		return "", err
	}
	if sv.Queue == nil {
		return "", fmt.Errorf("%w: no queue to run on", ErrInvalid)
	}
	now := sv.now().UTC().Truncate(time.Millisecond)
	lease := sv.Lease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	job := BuildJob(s, now)
	f, err := sv.Store.Claim(ctx, Claim{ID: id, Manual: true, Job: job, At: now, Owner: "run-now", Lease: lease, Now: now})
	if err != nil {
		return "", err
	}
	res, _, err := enqueueOne(ctx, sv.Queue, f)
	if err != nil {
		// The fire stays pending; a runner enqueues it after its lease.
		return job.ID, fmt.Errorf("schedule: run %s: enqueue (a runner retries it after %s): %w", id, lease, err)
	}
	if err := sv.Store.Complete(ctx, f, res); err != nil && !errors.Is(err, ErrConflict) {
		return job.ID, err
	}
	if res.Err != "" {
		return "", fmt.Errorf("%w: the queue refused the job: %s", ErrInvalid, res.Err)
	}
	return job.ID, nil
}
