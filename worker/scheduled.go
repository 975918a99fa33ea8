package worker

import (
	"context"
	"sync/atomic"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
)

// Scheduled jobs (package schedule, docs/SCHEDULES.md). A job whose
// idempotency key is a schedule's fire key (schedule.FireKey: only front
// ends and the schedule runner set keys, a chat user cannot) is run by
// these rules, here in the worker rather than in a front end, so every
// front end and every worker behaves the same:
//
//   - a message fire (kind message: a reminder) is delivered as it is,
//     with no model call;
//   - a quiet check-in whose answer starts with schedule.QuietNothing is
//     acknowledged with Result.Silent and no answer: front ends show
//     nothing;
//   - nobody waits at a scheduled job, so a confirmation it asks for is
//     denied as non_interactive unless the schedule's owner approved the
//     tool ahead (queue.Job.Approved; never the schedule tool).

// ReminderMark starts a reminder's answer, so it reads as one.
const ReminderMark = "⏰ "

// scheduledStats count what the rules did.
type scheduledStats struct {
	messages, silenced, denied atomic.Uint64
}

func (w *Worker) registerScheduled() {
	for _, c := range []struct {
		name, help string
		v          *atomic.Uint64
	}{
		{"odek_schedule_messages_total", "Reminder (message) schedule fires delivered by this worker without a model call.", &w.sched.messages},
		{"odek_schedule_quiet_silenced_total", "Quiet check-ins run here whose answer was " + schedule.QuietNothing + ", so nothing was delivered.", &w.sched.silenced},
		{"odek_schedule_approvals_denied_total", "Confirmations asked by scheduled jobs and denied as non_interactive (the owner did not approve the tool ahead).", &w.sched.denied},
	} {
		v := c.v
		_ = w.AddCounterFunc(c.name, c.help, func() float64 { return float64(v.Load()) })
	}
}

// scheduledPrompter answers a scheduled job's confirmations without a
// person: schedule.Confirm.
type scheduledPrompter struct {
	approved []string
	denied   *atomic.Uint64
}

// Confirm implements agent.Prompter.
func (p scheduledPrompter) Confirm(_ context.Context, question string) (bool, error) {
	ok, err := schedule.Confirm(p.approved, question)
	if !ok {
		p.denied.Add(1)
	}
	return ok, err
}

// runScheduled runs job by the rules above when it is a schedule's fire;
// handled is false for any other job (the caller runs it as usual).
func (w *Worker) runScheduled(ctx context.Context, job queue.Job, sink events.Sink, signals func(agent.SignalEvent)) (res queue.Result, handled bool, panicked any, err error) {
	fi, ok := schedule.ParseFireKey(job.IdempotencyKey)
	if !ok {
		return res, false, nil, nil
	}
	if fi.Message {
		w.sched.messages.Add(1)
		return queue.Result{Status: queue.StatusSucceeded, Answer: ReminderMark + job.Goal, NoModel: true}, true, nil, nil
	}
	p := scheduledPrompter{approved: job.Approved, denied: &w.sched.denied}
	res, panicked, err = w.call(ctx, job, sink, signals, p)
	if fi.Quiet && err == nil && panicked == nil && schedule.QuietSilent(res.Answer) {
		w.sched.silenced.Add(1)
		res.Silent, res.Answer, res.Artifacts = true, "", nil
	}
	return res, true, panicked, err
}
