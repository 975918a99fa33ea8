package bot

import (
	"context"
	"errors"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/queue"
)

// Messages while busy (issue 26, point 1). A message that arrives while
// one of the chat's jobs is unfinished follows the chat's busy policy
// (/busy, default Config.Busy): it waits as a job of its own ("queue", the
// receipt is its "Queued — position n" status), joins the running job
// ("steer": queue.Steering carries it to whichever worker runs the job,
// which hands it to the model at its next model boundary; the receipt is a
// short reply), or stops the running job and runs next ("interrupt": the
// job is canceled, its completed steps are already saved in the session,
// and its result says it was interrupted). chatcore.DecideBusy decides;
// this file does what it says.

// busyPolicy is the chat's policy: its /busy choice, else the operator's.
func (c *chat) busyPolicy() chatcore.Busy {
	if c.busy != "" {
		return c.busy
	}
	p, _ := chatcore.ParseBusy(c.b.cfg.Busy) // validated by New
	return p
}

// steering is the queue's steer half, nil when it has none.
func (b *Bot) steering() queue.Steering {
	st, _ := b.q.(queue.Steering)
	return st
}

// whileBusy applies the busy policy to r before it becomes a job. It
// reports whether r was handled (steered into the running job); false
// means r goes on to be queued or held as before (after the running job
// was told to stop, for an interrupt). It runs in the chat's actor.
func (c *chat) whileBusy(ctx context.Context, r jobRequest, lang string) bool {
	b := c.b
	// The jobs that count are those not being stopped (by /stop, an edit
	// or an earlier interrupt): the first of them is the one to steer into
	// or interrupt.
	var head *jobState
	live := 0
	for _, id := range c.queue {
		if js := c.jobs[id]; js != nil && !js.stopped {
			if head == nil {
				head = js
			}
			live++
		}
	}
	bc := chatcore.BusyCase{Policy: c.busyPolicy(), Unfinished: live, Held: len(c.held), Steerable: b.steering() != nil,
		Images: len(r.images) > 0, Edited: r.edited, Private: c.id > 0}
	if head != nil {
		bc.SameSession = head.session == c.sessionFor(r.userID)
		bc.SameUser = head.userID == r.userID
	}
	log := b.log.WithFields(logrus.Fields{"chat_id": c.id, "update_id": r.updateID})
	switch chatcore.DecideBusy(bc) {
	case chatcore.BusySteerIn:
		if head == nil {
			return false
		}
		err := b.steering().Steer(ctx, head.id, r.goal())
		if err != nil {
			// Finished meanwhile, full or unreachable: it runs as a job.
			if !errors.Is(err, queue.ErrNotFound) {
				log.WithError(err).Warn("bot: steering a message into the running job failed; queuing it instead")
			}
			return false
		}
		head.steered = append(head.steered, r)
		log.WithField("job_id", head.id).Info("bot: message steered into the running job")
		c.replyTo(ctx, r.srcMsg, tr(lang, "rc.steered"))
		return true
	case chatcore.BusyInterruptIt:
		if head == nil {
			return false
		}
		head.stopped, head.interrupted = true, true
		if err := b.q.Cancel(ctx, head.id); err != nil && !errors.Is(err, queue.ErrNotFound) {
			log.WithError(err).WithField("job_id", head.id).Warn("bot: interrupting the running job failed")
		}
		c.closeApprovals(ctx, head.id, "ap.c.stopped")
		log.WithField("job_id", head.id).Info("bot: running job interrupted by a newer message")
		c.replyTo(ctx, r.srcMsg, tr(lang, "rc.interrupting"))
	}
	return false
}

// leftovers runs the messages steered into a finished job that its worker
// did not take (it ended first) as jobs of their own, in order: a steered
// message is never dropped. It runs in the chat's actor after the job's
// result was delivered.
func (c *chat) leftovers(ctx context.Context, js *jobState) {
	st := c.b.steering()
	if js == nil || len(js.steered) == 0 || st == nil {
		return
	}
	left, err := st.TakeSteer(ctx, js.id)
	if err != nil {
		c.b.log.WithError(err).WithField("job_id", js.id).Warn("bot: reading the job's untaken steered messages failed")
		return
	}
	if len(left) > len(js.steered) {
		left = left[len(left)-len(js.steered):]
	}
	for _, r := range js.steered[len(js.steered)-len(left):] {
		lang := c.b.lang(r.userID)
		adm := c.budgetGate(lang)
		switch {
		case adm.Refusal != "":
			c.replyTo(ctx, r.srcMsg, adm.Refusal)
		case adm.Verdict == chatcore.BudgetHeld:
			c.hold(ctx, r, lang)
		default:
			c.enqueue(ctx, r, adm, lang, 0)
		}
	}
}

// busyCommand is /busy [queue|steer|interrupt]: without a word it shows
// the chat's policy, with one it sets it.
func (c *chat) busyCommand(ctx context.Context, lang, arg string) {
	if strings.TrimSpace(arg) == "" {
		c.reply(ctx, tr(lang, "busy.show", tr(lang, "busy."+string(c.busyPolicy()))))
		return
	}
	p, err := chatcore.ParseBusy(arg)
	if err != nil {
		c.reply(ctx, tr(lang, "busy.bad", oneLine(arg, 20)))
		return
	}
	c.busy = p
	if p == c.defaultBusy() {
		c.busy = "" // the operator's default: nothing to keep
	}
	c.reply(ctx, tr(lang, "busy.set", tr(lang, "busy."+string(p))))
}

func (c *chat) defaultBusy() chatcore.Busy {
	p, _ := chatcore.ParseBusy(c.b.cfg.Busy)
	return p
}
