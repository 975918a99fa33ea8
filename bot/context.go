package bot

import (
	"context"
	"errors"
	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/bot/tgformat"
)

// Compactor folds the oldest turns of a chat's conversation into its
// digest now (Telegram's /compact), with one side call to the model: it
// is, with Transcriber, the only way the bot reaches a model endpoint, and
// it may be left unset: /compact then says it is not available here.
// odek-bot's, when it has a model key, loads the chat's session from the
// workers' session store, calls host.Compact and saves the result; the
// compose bot, given none, asks a worker (QueueCompactor, compactjob.go).
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
	if refusal := c.budgetGate(lang).Refusal; refusal != "" {
		c.reply(ctx, refusal)
		return
	}
	session := c.sessionFor(userID)
	res, err := b.cfg.Compactor.Compact(ctx, CompactRequest{ChatID: c.id, Session: session, Model: c.jobModel()})
	if side := int64(res.SideInputTokens + res.SideOutput); side > 0 {
		c.books.Spend(side, b.cfg.Now())  // the digest call is the chat's spending too
		c.spendOutside(ctx, userID, side) // budgets.go: and the user's
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
	g := c.books.Gauge
	if g.Session != session {
		g = chatcore.Gauge{Session: session}
	}
	g.Tokens, g.At = int64(res.AfterTokens), now
	g.CompactedAt, g.Before, g.After = now, int64(res.BeforeTokens), int64(res.AfterTokens)
	c.books.Gauge = g
	c.reply(ctx, tr(lang, "compact.done", res.Folded, tgformat.Thousands(int64(res.BeforeTokens)), tgformat.Thousands(int64(res.AfterTokens)),
		tgformat.Thousands(int64(res.SideInputTokens+res.SideOutput))))
}
