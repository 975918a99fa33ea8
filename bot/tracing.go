package bot

import (
	"context"

	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/queue"
)

// Tracing of the bot's side of a job (issue 24, docs/OBSERVABILITY.md).
// Each Telegram message is a "telegram.update" span; the job it becomes
// is put on the queue under an "odek.enqueue" producer span whose context
// travels inside the job (queue.Job.Trace), where the worker continues
// it. When the result comes back, "telegram.deliver" is a child of that
// same trace and links to the update's span. While tracing is off every
// helper returns at once; a trace handed to the bot is still passed on.

// traceUpdate starts the span of one update taken from Telegram.
func traceUpdate(ctx context.Context, updateID int, chatID int64) (context.Context, telemetry.Span) {
	ctx, s := telemetry.StartConsumer(ctx, "telegram.update")
	if s.Recording() {
		s.Int("telegram.update_id", int64(updateID))
		s.Int(telemetry.KeyChatID, chatID)
	}
	return ctx, s
}

// jobTrace is what a job's state keeps of its trace: the enqueue span's
// context (the parent of the delivery) and the update's (its link).
type jobTrace struct {
	enqueue, update map[string]string
}

// traceEnqueue starts the producer span of putting job on the queue and
// stores its context in job.Trace.
func traceEnqueue(ctx context.Context, job *queue.Job) (context.Context, telemetry.Span, jobTrace) {
	jt := jobTrace{update: telemetry.ToMap(ctx)}
	ctx, s := telemetry.StartProducer(ctx, "odek.enqueue")
	if s.Recording() {
		s.Int(telemetry.KeyChatID, job.ChatID)
		if job.SessionID != "" {
			s.String(telemetry.KeyConversationID, job.SessionID)
		}
	}
	job.Trace = telemetry.ToMap(ctx)
	jt.enqueue = job.Trace
	return ctx, s, jt
}

// traceEnqueued ends the enqueue span with its outcome.
func traceEnqueued(s telemetry.Span, stored queue.Job, dup bool, err error) {
	if s.Recording() {
		if stored.ID != "" {
			s.String(telemetry.KeyJobID, stored.ID)
		}
		if dup {
			s.Int("odek.job.duplicate", 1)
		}
		s.Fail("enqueue", err)
	}
	s.End()
}

// traceDeliver starts the span of delivering a job's result to its chat:
// in the job's trace, linked to the update that asked for it.
func traceDeliver(ctx context.Context, jt jobTrace, res queue.Result) (context.Context, telemetry.Span) {
	if !telemetry.On() {
		return ctx, telemetry.Span{}
	}
	ctx, s := telemetry.StartLinked(telemetry.FromMap(ctx, jt.enqueue), "telegram.deliver", jt.update)
	if s.Recording() {
		s.String(telemetry.KeyJobID, res.JobID)
		s.Int(telemetry.KeyChatID, res.ChatID)
		s.String(telemetry.KeyStatus, string(res.Status))
		s.Int(telemetry.KeyAttempt, int64(res.Attempt))
	}
	return ctx, s
}
