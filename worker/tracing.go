package worker

import (
	"context"
	"errors"

	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/queue"
)

// traceJob opens a claimed job's spans (issue 24, docs/OBSERVABILITY.md),
// continuing the trace the front end put in Job.Trace: "odek.job" (kind
// consumer) covers the job on this worker from the claim to the ack, and
// its first child "odek.job.claim" the taking over of the lease (heartbeat,
// progress sink, approvals) until the run starts. runJob adds
// "odek.job.run" (the RunFunc; the agent's spans hang below it) and
// "odek.job.ack" (publishing the result). While tracing is off both spans
// are zero and ctx comes back unchanged unless the job carried a trace.
func (w *Worker) traceJob(ctx context.Context, l queue.Lease) (context.Context, telemetry.Span, telemetry.Span) {
	ctx = telemetry.FromMap(ctx, l.Job.Trace)
	ctx, job := telemetry.StartConsumer(ctx, "odek.job")
	if job.Recording() {
		job.String(telemetry.KeyJobID, l.Job.ID)
		job.Int(telemetry.KeyChatID, l.Job.ChatID)
		job.Int(telemetry.KeyAttempt, int64(l.Job.Attempt))
		job.String(telemetry.KeyWorker, w.cfg.Name)
		if l.Job.SessionID != "" {
			job.String(telemetry.KeyConversationID, l.Job.SessionID)
		}
		if l.Suspect {
			job.Int("odek.job.suspect", 1)
		}
	}
	_, claim := telemetry.Start(ctx, "odek.job.claim")
	return ctx, job, claim
}

// traceResult puts a finished job's outcome on its span.
func traceResult(s telemetry.Span, status queue.Status, res queue.Result) {
	if !s.Recording() {
		return
	}
	s.String(telemetry.KeyStatus, string(status))
	s.Usage(int(res.Usage.PromptTokens), int(res.Usage.CompletionTokens), int(res.Usage.CachedTokens))
	switch status {
	case queue.StatusSucceeded, queue.StatusCanceled:
	case "":
		s.Fail("result_dropped", nil)
	default:
		s.Fail(string(status), errors.New(res.Error))
	}
}
