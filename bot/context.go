package bot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/odekrun/odek/events"
)

// Compactor folds the oldest turns of a chat's conversation into its
// digest now (Telegram's /compact), with one side call to the model: it
// is, with Transcriber, the only way the bot reaches a model endpoint, and
// it may be left unset (the compose bot, given no model key, has none):
// /compact then says it is not available here. odek-bot's loads the
// chat's session from the workers' session store, calls agent.Compact and
// saves the result.
type Compactor interface {
	Compact(ctx context.Context, r CompactRequest) (Compacted, error)
}

// CompactRequest names the conversation to compact: the chat and the
// session id the bot gives its jobs (queue.Job.SessionID), and the model
// the chat chose ("" = the default).
type CompactRequest struct {
	ChatID  int64
	Session string
	Model   string
}

// Compacted is what a compaction did. Folded 0 means there was nothing to
// fold (the conversation is too short, or there is none yet).
type Compacted struct {
	Folded                      int // message groups replaced by the digest
	BeforeTokens, AfterTokens   int // estimated conversation tokens
	SideInputTokens, SideOutput int // the digest call's usage
}

// gauge is what the bot knows of how full a chat's conversation is: the
// input tokens of the latest model call of its latest job (the whole
// context that call sent), the model, and the latest compaction. Built
// from the jobs' progress (iteration_completed, run_started,
// context_compacted) and from /compact. Pure data, kept with the chat.
type gauge struct {
	session     string // the conversation it describes
	model       string // "" = unknown (the workers' default)
	tokens      int64  // input tokens of the latest model call
	at          time.Time
	compactedAt time.Time
	before      int64 // estimated tokens before and after the latest compaction
	after       int64
}

// contextInfo is what a job's progress says about its conversation.
type contextInfo struct {
	model       string
	tokens      int64
	compacted   bool
	before      int64
	after       int64
	compactedAt time.Time
}

// applyContext folds one progress event into ci. Pure.
func (ci contextInfo) applyContext(ev *events.Event) contextInfo {
	switch ev.Type {
	case events.RunStarted:
		if m, _ := ev.Data["model"].(string); m != "" {
			ci.model = oneLine(m, 80)
		}
	case events.IterationCompleted:
		var d events.IterationCompletedData
		d.Decode(ev.Data)
		if d.CallInputTokens > 0 {
			ci.tokens = int64(d.CallInputTokens)
		}
	case events.ContextCompacted:
		var d events.ContextCompactedData
		d.Decode(ev.Data)
		ci.compacted, ci.before, ci.after, ci.compactedAt = true, int64(max(d.BeforeTokens, 0)), int64(max(d.AfterTokens, 0)), ev.Timestamp
		ci.tokens = ci.after
	}
	return ci
}

// record updates the gauge of session with what a finished job's progress
// said, at now. Pure.
func (g gauge) record(session string, ci contextInfo, now time.Time) gauge {
	if g.session != session {
		g = gauge{session: session}
	}
	if ci.model != "" {
		g.model = ci.model
	}
	if ci.tokens > 0 {
		g.tokens, g.at = ci.tokens, now
	}
	if ci.compacted {
		at := ci.compactedAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		g.compactedAt, g.before, g.after = at, ci.before, ci.after
	}
	return g
}

// text renders the gauge for /status, e.g.
//
//	Context: ~12,345 of 32,768 tokens (38 %) · compacted 2 h ago (40,000 → 12,000)
//
// window 0 leaves the share out; "" when nothing is known. Pure.
func (g gauge) text(lang string, window int, now time.Time) string {
	if g.tokens <= 0 && g.compactedAt.IsZero() {
		return ""
	}
	s := tr(lang, "ctx.used", Thousands(g.tokens))
	if window > 0 {
		s = tr(lang, "ctx.of", Thousands(g.tokens), Thousands(int64(window)), g.tokens*100/int64(window))
	}
	if !g.compactedAt.IsZero() {
		s += " · " + tr(lang, "ctx.compacted", humanWait(now.Sub(g.compactedAt)), Thousands(g.before), Thousands(g.after))
	} else {
		s += " · " + tr(lang, "ctx.never")
	}
	return s
}

// gaugeLine is the chat's context line for /status of userID's
// conversation ("" when unknown).
func (c *chat) gaugeLine(lang string, userID int64) string {
	g := c.gauge
	if g.session != c.sessionFor(userID) {
		return ""
	}
	window := 0
	if f := c.b.cfg.ContextWindow; f != nil {
		m := g.model
		if m == "" {
			m = c.jobModel()
		}
		window = f(m)
	}
	return g.text(lang, window, c.b.cfg.Now())
}

// compact runs /compact for userID's conversation. It runs in the chat's
// actor, so the chat waits for the side call (as it would for Telegram).
func (c *chat) compact(ctx context.Context, userID int64) {
	b := c.b
	lang := b.lang(userID)
	if b.cfg.Compactor == nil {
		c.reply(ctx, tr(lang, "compact.off"))
		return
	}
	if len(c.queue) > 0 || len(c.held) > 0 {
		// The running job saves the session when it ends: compacting now
		// would be overwritten, or overwrite its steps.
		c.reply(ctx, tr(lang, "compact.busy"))
		return
	}
	if _, refusal, _ := c.budgetGate(lang); refusal != "" {
		c.reply(ctx, refusal)
		return
	}
	session := c.sessionFor(userID)
	res, err := b.cfg.Compactor.Compact(ctx, CompactRequest{ChatID: c.id, Session: session, Model: c.jobModel()})
	if side := int64(res.SideInputTokens + res.SideOutput); side > 0 {
		c.roll()
		c.use.tokens += side // the digest call is the chat's spending too
	}
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return
	case err != nil:
		b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: /compact failed")
		c.reply(ctx, tr(lang, "compact.failed", oneLine(err.Error(), 200)))
		return
	case res.Folded == 0:
		c.reply(ctx, tr(lang, "compact.nothing"))
		return
	}
	now := b.cfg.Now()
	g := c.gauge
	if g.session != session {
		g = gauge{session: session}
	}
	g.tokens, g.at = int64(res.AfterTokens), now
	g.compactedAt, g.before, g.after = now, int64(res.BeforeTokens), int64(res.AfterTokens)
	c.gauge = g
	c.reply(ctx, tr(lang, "compact.done", res.Folded, Thousands(int64(res.BeforeTokens)), Thousands(int64(res.AfterTokens)),
		Thousands(int64(res.SideInputTokens+res.SideOutput))))
}

// cachedLine renders the prompt cache's share of a total's input tokens:
// ", 40 % of input cached" ("" when nothing was cached). Pure.
func cachedLine(lang string, prompt, cached int64) string {
	if cached <= 0 || prompt <= 0 {
		return ""
	}
	return fmt.Sprintf(tr(lang, "use.cached"), Thousands(cached), min(cached, prompt)*100/prompt)
}
