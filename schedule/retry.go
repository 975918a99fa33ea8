package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/odekrun/odek/queue"
)

// One-shot retries: a one-shot goal (`at`, `in`, /remind of a goal) whose
// job failed is fired again after RetryBackoff(n), at most RetryMax times
// (DefaultRetries when 0). A recurring schedule is not retried: its next
// fire comes anyway. A message (reminder) needs no model and does not
// fail.
const (
	DefaultRetries = 3
	MaxRetries     = 10
)

// RetryBackoff is the wait before the n-th retry (n from 1): 30 s, 1 min,
// 5 min, then 15 min, then 1 h for every later one.
func RetryBackoff(n int) time.Duration {
	steps := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}
	if n < 1 {
		n = 1
	}
	if n <= len(steps) {
		return steps[n-1]
	}
	return time.Hour
}

// Retryable reports whether a result of a scheduled job calls for a retry:
// the run failed or was dead-lettered (not canceled by a person, not a
// budget stop).
func Retryable(res queue.Result) bool {
	switch res.Status {
	case queue.StatusFailed:
		return res.ExitCode != 4 // agent.ExitBudget: more budget, not more tries, helps
	case queue.StatusDeadLettered:
		return true
	}
	return false
}

// RetryFailed is what a worker calls after it acknowledged the result of
// job: when job is a one-shot schedule's fire (its idempotency key says
// so) whose run failed, the schedule is armed again RetryBackoff later,
// through Store.Retry (so of several workers that see the result only
// one arms it). It returns the next fire time, or zero when nothing was
// retried.
func RetryFailed(ctx context.Context, st Store, job queue.Job, res queue.Result, now time.Time) (time.Time, error) {
	fi, ok := ParseFireKey(job.IdempotencyKey)
	if !ok || fi.Message || !Retryable(res) {
		return time.Time{}, nil
	}
	s, err := st.Get(ctx, fi.ScheduleID)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	sp, err := s.ParsedSpec()
	if err != nil || sp.Kind != KindAt || s.Enabled || !s.Last.Equal(fi.At) {
		return time.Time{}, nil
	}
	max := s.RetryMax
	switch {
	case max < 0:
		return time.Time{}, nil
	case max == 0:
		max = DefaultRetries
	}
	if s.Retries >= max {
		return time.Time{}, nil
	}
	next := now.Add(RetryBackoff(s.Retries + 1)).UTC().Truncate(time.Millisecond)
	if _, err := st.Retry(ctx, s.ID, fi.At, next, max); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return time.Time{}, nil
		}
		return time.Time{}, err
	}
	return next, nil
}

// ToolName is the model's schedule tool (package schedule/tool); it can
// never be approved ahead.
const ToolName = "schedule"

// MaxApprove bounds Schedule.Approve.
const MaxApprove = 16

func validApprove(names []string) error {
	if len(names) > MaxApprove {
		return invalid("approve", "%d tools: at most %d", len(names), MaxApprove)
	}
	for _, n := range names {
		if n == "" || len(n) > 64 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return invalid("approve", "%q is not a tool name", clip(n, 70))
		}
		if n == ToolName {
			return invalid("approve", "the %s tool cannot be approved ahead: a scheduled job must not create schedules unseen", ToolName)
		}
	}
	return nil
}

// ErrNonInteractive is the denial of a confirmation a scheduled job asked
// for: nobody is there to answer, and the owner did not approve the tool
// ahead (Schedule.Approve).
var ErrNonInteractive = errors.New("non_interactive: a scheduled job cannot wait for a person to confirm, and the schedule's owner did not approve this tool ahead")

// PromptTool is the tool named by an agent confirmation question
// ("odek: allow <tool> (<class>...)? [y/N] "), "" when the question is
// not one.
func PromptTool(question string) string {
	rest, ok := strings.CutPrefix(question, "odek: allow ")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, " (")
	if !ok || name == "" || strings.ContainsAny(name, " \n") {
		return ""
	}
	return name
}

// Confirm decides a confirmation a scheduled job asks for (package worker
// calls it instead of asking the chat): allowed when the question names a
// tool in approved, else ErrNonInteractive.
func Confirm(approved []string, question string) (bool, error) {
	tool := PromptTool(question)
	if tool != "" && tool != ToolName {
		for _, a := range approved {
			if a == tool {
				return true, nil
			}
		}
	}
	return false, fmt.Errorf("%w (tool %q)", ErrNonInteractive, clip(tool, 64))
}
