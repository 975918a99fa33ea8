package bot

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/queue"
)

// chat is one chat's actor state: the chat's sessions, usage, artifacts,
// its unfinished jobs, open approval prompts and waiting batches. It is
// owned by the chat's serializer goroutine: only functions handed to
// Bot.serial.Do for this chat read or change it, so it has no lock. The
// Bot itself only routes updates, results, progress ticks and approvals to
// the right chat.
type chat struct {
	chatState
	id        int64
	topic     int // the forum topic this actor serves (0 = the chat's main conversation; topics.go)
	b         *Bot
	jobs      map[string]*jobState      // this chat's unfinished jobs by id
	approvals map[string]*approvalState // open approval prompts by approval id
	batches   map[int64]*batch          // by user id
	// prunable: the last prune found nothing worth keeping.
	prunable bool
}

func (b *Bot) newChat(k actorKey) *chat {
	return &chat{id: k.chat, topic: k.topic, b: b, jobs: map[string]*jobState{}, approvals: map[string]*approvalState{}, batches: map[int64]*batch{}}
}

// publish is what the chat shows the router after each function it ran:
// whether it has unfinished jobs and, with a state store, its snapshot.
func (b *Bot) publish(c *chat) published {
	p := published{busy: len(c.queue) > 0 || len(c.held) > 0, drop: c.prunable && c.empty(b.cfg.Now())}
	b.days.put(c) // topics.go: what this conversation spends of the chat's day
	if b.cfg.State != nil {
		s := c.snap()
		p.snap = &s
		p.jobs = map[string]jobSnap{}
		for id, j := range c.jobs {
			p.jobs[id] = jobSnap{Chat: j.chatID, User: j.userID, UserName: j.userName, StatusMsg: j.statusMsg, StartedAt: j.startedAt, Reserved: c.books.Reserved[id], Session: j.session, Topic: c.topic}
		}
	}
	return p
}

// snap is the chat's part of the state file, sharing no memory with it.
func (c *chat) snap() chatSnap {
	cs := chatSnap{Queue: slices.Clone(c.queue), Session: c.session, Day: c.books.Use.Day, Tokens: c.books.Use.Tokens, Prompt: c.books.Use.Prompt, Cached: c.books.Use.Cached, CostUSD: c.books.Use.CostUSD,
		Jobs: c.books.Use.Jobs, Warned: c.books.Use.Warned, NextArt: c.nextArt, History: slices.Clone(c.books.Hist), Model: c.model, Busy: string(c.busy),
		Stream: string(c.streaming), Chatter: slices.Clone(c.chatter), Voice: c.voice}
	for _, a := range c.arts {
		cs.Arts = append(cs.Arts, artSnap{ID: a.id, Meta: a.meta})
	}
	for _, h := range c.held {
		cs.Held = append(cs.Held, h.snap())
	}
	if g := c.books.Gauge; g.Session != "" {
		cs.Context = &gaugeSnap{Session: g.Session, Model: g.Model, Tokens: g.Tokens, At: g.At, CompactedAt: g.CompactedAt, Before: g.Before, After: g.After}
	}
	return cs
}

// roll moves yesterday's usage into the history when the UTC day changed
// (what chatLocked did before each use of a chat).
func (c *chat) roll() *chat {
	c.books.Roll(c.b.cfg.Now())
	return c
}

// prune drops history past chatcore.KeepDays and marks the chat droppable when it
// holds nothing a later message would miss: no unfinished job, no session
// chosen with /new, no artifact ids, and no usage today.
func (c *chat) prune(now time.Time) {
	c.books.Prune(now) // drops days past chatcore.KeepDays
	c.pruneChatter(now)
	c.prunable = c.empty(now)
}

func (c *chat) empty(now time.Time) bool {
	return c.books.Empty(now) && len(c.queue) == 0 && len(c.held) == 0 && c.session == "" && len(c.userSessions) == 0 && len(c.arts) == 0 && c.nextArt == 0 &&
		len(c.jobs) == 0 && len(c.approvals) == 0 && len(c.batches) == 0 && c.model == "" && c.busy == "" &&
		c.streaming == "" && len(c.chatter) == 0 && c.voice == ""
}

// reply sends plain text, logging failures. It reports whether the chat is
// still reachable.
func (c *chat) reply(ctx context.Context, text string) bool {
	_, kind, err := c.b.tg.SendPlain(ctx, c.id, text, nil)
	return c.checkSend(ctx, kind, err)
}

// replyTo sends plain text as a reply to message msgID (0 = none).
func (c *chat) replyTo(ctx context.Context, msgID int, text string) bool {
	_, kind, err := c.b.tg.SendPlainReply(ctx, c.id, msgID, text, nil)
	return c.checkSend(ctx, kind, err)
}

// checkSend logs a failed send and reacts to an unreachable chat by
// canceling its jobs. It reports whether the chat is still reachable.
func (c *chat) checkSend(ctx context.Context, kind tgKind, err error) bool {
	b := c.b
	switch kind {
	case tgOK, tgCanceled:
		return true
	case tgChatGone:
		b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: chat unreachable (bot blocked, kicked or chat gone); canceling its pending jobs")
		c.cancelAll(ctx)
		return false
	default:
		b.log.WithError(err).WithFields(logrus.Fields{"chat_id": c.id, "kind": kind.String()}).Warn("bot: Telegram call failed")
		return true
	}
}

// cancelAll forgets the chat's held requests and cancels every unfinished
// job of the chat, newest first so the queued ones never start. A job the queue does not know (any more: the
// embedded queue after a restart, a finished job) is forgotten at once, as
// no result for it may ever come; the status messages of forgotten jobs
// and of held requests are returned. It reports how many jobs and requests
// were canceled or forgotten.
func (c *chat) cancelAll(ctx context.Context) (int, []int) {
	b := c.b
	ids := slices.Clone(c.queue)
	for _, id := range ids {
		if js := c.jobs[id]; js != nil {
			js.stopped = true
		}
	}
	statusMsgs := c.held.drop(func(heldRequest) bool { return false })
	n := len(statusMsgs)
	for i := len(ids) - 1; i >= 0; i-- {
		err := b.q.Cancel(ctx, ids[i])
		switch {
		case err == nil:
			n++
		case errors.Is(err, queue.ErrNotFound):
			n++
			if msg := c.forgetJob(ids[i]); msg != 0 {
				statusMsgs = append(statusMsgs, msg)
			}
		default:
			b.log.WithError(err).WithField("job_id", ids[i]).Warn("bot: cancel failed")
		}
	}
	return n, statusMsgs
}

// forgetJob drops a job from the chat's queue and job table and returns
// its status message (0 = none).
func (c *chat) forgetJob(id string) int {
	c.queue = slices.DeleteFunc(c.queue, func(q string) bool { return q == id })
	var msg int
	if js := c.jobs[id]; js != nil {
		msg = js.statusMsg
	}
	delete(c.jobs, id)
	c.books.Ended(id)
	c.releaseBudget(context.Background(), id) // budgets.go: it will never be settled
	return msg
}

// jobByStatus finds the job whose status message is msg.
func (c *chat) jobByStatus(msg int) *jobState {
	for _, id := range c.queue {
		if js := c.jobs[id]; js != nil && js.statusMsg == msg {
			return js
		}
	}
	return nil
}
