package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A job's progress stream holds one schema per concept, told apart by the
// entry's "schema" field: the run's events (events.Schema,
// odek.event/v1), the job's compact state (SummarySchema,
// ProgressSummary) and the answer as it is written (DeltaSchema,
// AnswerDelta). All three are written by the worker, from what the run
// gave it, already masked by the run's redactor.

// SummarySchema is the schema field of a ProgressSummary entry.
const SummarySchema = "odek.progress/v1"

// ProgressSummary is the compact state of a running job that a worker
// appends to the job's progress stream (JSON) when the job starts, after
// every iteration and when the run ends, so a front end can show one
// status line without following every event.
type ProgressSummary struct {
	Schema string `json:"schema"` // SummarySchema
	JobID  string `json:"job_id"`
	// State is "started", "running" or "finished".
	State     string `json:"state"`
	Attempt   int    `json:"attempt,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	ToolCalls int    `json:"tool_calls,omitempty"`
	// LastTool is the name of the most recent tool call.
	LastTool     string `json:"last_tool,omitempty"`
	InputTokens  int64  `json:"input_tokens,omitempty"`
	OutputTokens int64  `json:"output_tokens,omitempty"`
	ElapsedMS    int64  `json:"elapsed_ms"`
	// Outcome is set when State is "finished": the closing event type
	// (run_completed or run_failed) and its error_class, if any.
	Outcome    string `json:"outcome,omitempty"`
	ErrorClass string `json:"error_class,omitempty"`
}

// DeltaSchema is the schema field of an AnswerDelta progress entry.
const DeltaSchema = "odek.delta/v1"

// AnswerDelta is a piece of the answer a running job's model is writing,
// which a worker appends to the job's progress stream from the run's
// answer signals (coalesced, a few a second) so a front end can show the
// answer as it is generated. Call numbers the model calls (attempts) of
// the run from 1: a higher Call starts a new text. Offset is how many bytes of this call's text came
// before Text, so a reader that missed an entry sees the gap.
type AnswerDelta struct {
	Schema string `json:"schema"` // DeltaSchema
	JobID  string `json:"job_id"`
	Call   int    `json:"call"`
	Offset int    `json:"offset"`
	Text   string `json:"text"`
}

// ProgressEntry is one entry for PublishProgressBatch.
type ProgressEntry struct {
	JobID string
	Data  []byte
}

// ProgressBatcher publishes many progress entries in one round trip. Both
// queues implement it; a worker uses it to pipeline the events of all its
// running jobs.
type ProgressBatcher interface {
	// PublishProgressBatch appends each entry to its job's progress stream,
	// in order. Entries over MaxPayloadBytes are skipped and reported in
	// the returned error (a *PayloadTooLargeError for the first one); the
	// others are still published.
	PublishProgressBatch(ctx context.Context, entries []ProgressEntry) error
}

var (
	_ ProgressBatcher = (*Redis)(nil)
	_ ProgressBatcher = (*Memory)(nil)
)

// PublishProgressBatch implements ProgressBatcher: one pipeline of XADDs.
func (r *Redis) PublishProgressBatch(ctx context.Context, entries []ProgressEntry) error {
	var tooLarge error
	p := r.c.Pipeline()
	n := 0
	for _, e := range entries {
		if len(e.Data) > r.o.MaxPayloadBytes {
			if tooLarge == nil {
				tooLarge = &PayloadTooLargeError{What: "progress", Limit: r.o.MaxPayloadBytes, Size: len(e.Data)}
			}
			continue
		}
		p.XAdd(ctx, &redis.XAddArgs{Stream: r.key("progress:", e.JobID), MaxLen: r.o.ProgressMaxLen, Approx: true, Values: []any{"d", e.Data}})
		n++
	}
	if n > 0 {
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("queue: publish %d progress entries: %w", n, err)
		}
	}
	return tooLarge
}

// PublishProgressBatch implements ProgressBatcher.
func (m *Memory) PublishProgressBatch(ctx context.Context, entries []ProgressEntry) error {
	var tooLarge error
	for _, e := range entries {
		err := m.PublishProgress(ctx, e.JobID, e.Data)
		if err != nil && tooLarge == nil {
			tooLarge = err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return tooLarge
}
