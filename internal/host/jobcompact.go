package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// CompactKeep is how many of the newest message groups a compaction asked
// for by a chat (/compact, as a job or in the bot's process) keeps
// verbatim, as `odek session compact` does by default.
const CompactKeep = 2

// runCompact runs a queue.KindCompact job: it folds the oldest groups of
// the chat's saved conversation into the digest with one side call to the
// job's model (Compact, masked like a run's saved session) and saves it.
// No agent runs and no tool is offered, so nothing needs confining. The
// outcome goes out as events on the job's progress stream, which the
// front end waiting for it reads: context_compacted (folded_groups 0 when
// there was nothing to fold), or run_failed with the error's class (not
// its text: the front end shows it to the chat). The result's answer is
// a plain line for a front end that reads only results.
func (j *JobRunner) runCompact(ctx context.Context, job queue.Job, sink events.Sink, log logrus.FieldLogger) (queue.Result, error) {
	start := time.Now()
	cfg := j.jobConfig(job, log)
	seq := uint64(0)
	emit := func(p events.Payload) {
		if sink == nil {
			return
		}
		seq++
		sink.Write(&events.Event{Schema: events.Schema, Type: p.EventType(), Seq: seq, RunID: job.ID,
			Timestamp: time.Now().UTC(), Data: p.Data()})
	}
	fail := func(err error) (queue.Result, error) {
		d := events.RunFailedData{Duration: time.Since(start), ErrorClass: agent.ErrorClass(err)}
		emit(d)
		// The error becomes the result's text, which leaves the worker
		// like a run's failure: masked the same way (a provider may echo
		// the key it refused).
		red := redact.New()
		red.AddValue(cfg.APIKey)
		if j.Environ != nil {
			red.AddFromEnv(j.Environ)
		}
		return queue.Result{Status: queue.StatusFailed, ExitCode: ExitError, DurationMS: time.Since(start).Milliseconds()}, errors.New(red.String(err.Error()))
	}
	sid := JobSessionID(job)
	s, err := j.Sessions.Load(ctx, sid)
	switch {
	case errors.Is(err, session.ErrNotFound):
		emit(events.ContextCompactedData{})
		return queue.Result{Answer: "There is no conversation to compact yet.", DurationMS: time.Since(start).Milliseconds()}, nil
	case err != nil:
		return fail(fmt.Errorf("loading the chat's session: %w", err))
	}
	model := cfg.Model // the job's model when the operator allows it, else the worker's
	msgs, cp, err := Compact(ctx, j.host.llm, model, s.Messages, CompactKeep, cfg.APIKey, j.Environ)
	res := queue.Result{Usage: queue.Usage{PromptTokens: int64(cp.Usage.PromptTokens), CompletionTokens: int64(cp.Usage.CompletionTokens),
		CachedTokens: int64(cp.Usage.CachedTokens)}}
	prices := cfg.Limits.Prices(cfg.Preset())
	if p, known := prices.For(model); known {
		res.Usage.CostUSD = budget.CostCached(p, cp.Usage.PromptTokens, cp.Usage.CachedTokens, cp.Usage.CompletionTokens)
	}
	switch {
	case errors.Is(err, agent.ErrNothingToCompact):
		emit(events.ContextCompactedData{})
		res.Answer = "The conversation is too short to compact."
	case err != nil:
		r, err := fail(err)
		r.Usage = res.Usage
		return r, err
	default:
		s.Messages = msgs
		if err := j.Sessions.Save(ctx, s); err != nil {
			r, err := fail(fmt.Errorf("saving the compacted session: %w", err))
			r.Usage = res.Usage
			return r, err
		}
		emit(events.ContextCompactedData{BeforeTokens: cp.BeforeTokens, AfterTokens: cp.AfterTokens, FoldedGroups: cp.FoldedGroups,
			SideCallInputTokens: cp.Usage.PromptTokens, SideCallOutputTokens: cp.Usage.CompletionTokens})
		res.Answer = fmt.Sprintf("Compacted: %d message groups folded into the digest, about %d → %d tokens.", cp.FoldedGroups,
			cp.BeforeTokens, cp.AfterTokens)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}
