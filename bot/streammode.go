package bot

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/queue"
)

// Progress and streaming without noise (issue 26, point 7): the chat's
// streaming mode (/stream, default Config.Stream; chatcore.Stream says
// what each shows), append-only drafts (chatcore.GrowDraft), the first
// draft sent as soon as the model's first text is in the job's progress
// stream (watchDraft), an acknowledging reaction on the asking message
// when its job is created (ackReaction), and one readable notice for
// provider errors with the further ones of a cooldown folded into it
// (providerNotice).

// DefaultAckReaction is Config.AckReaction's default.
const DefaultAckReaction = "👀"

// providerCooldown is how long after a provider notice further provider
// errors of the chat are folded into it.
const providerCooldown = 10 * time.Minute

// maxDraftWatchers bounds the goroutines waiting for jobs' first text:
// with Redis each holds a pooled connection in a blocking XREAD. A job
// beyond the bound has its first draft sent at the next progress read.
const maxDraftWatchers = 16

// draftWatchBlock is how long one blocking progress read waits.
const draftWatchBlock = 5 * time.Second

// streamMode is the chat's mode: its /stream choice, else the operator's.
func (c *chat) streamMode() chatcore.Stream {
	if c.streaming != "" {
		return c.streaming
	}
	return c.b.defaultStream()
}

func (b *Bot) defaultStream() chatcore.Stream {
	m, _ := chatcore.ParseStream(b.cfg.Stream) // validated by New
	return m
}

// streamCommand is /stream [progress|partial|off]: without a word it shows
// the chat's mode, with one it sets it.
func (c *chat) streamCommand(ctx context.Context, lang, arg string) {
	if strings.TrimSpace(arg) == "" {
		c.reply(ctx, tr(lang, "stream.show", tr(lang, "stream."+string(c.streamMode()))))
		return
	}
	m, err := chatcore.ParseStream(arg)
	if err != nil || strings.EqualFold(strings.TrimSpace(arg), "auto") || strings.EqualFold(strings.TrimSpace(arg), "edit") {
		c.reply(ctx, tr(lang, "stream.bad", oneLine(arg, 20)))
		return
	}
	c.streaming = m
	if m == c.b.defaultStream() {
		c.streaming = "" // the operator's default: nothing to keep
	}
	c.reply(ctx, tr(lang, "stream.set", tr(lang, "stream."+string(m))))
}

// ---- the first draft, as soon as there is text ----

// watchers bounds the draft watchers.
type watchers struct {
	once  sync.Once
	slots chan struct{}
}

func (w *watchers) take() bool {
	w.once.Do(func() { w.slots = make(chan struct{}, maxDraftWatchers) })
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (w *watchers) give() { <-w.slots }

// wantsFirstDraft reports whether js's first draft is still to come: it
// streams its answer as drafts and none was shown.
func (c *chat) wantsFirstDraft(js *jobState) bool {
	return js != nil && !js.stopped && !js.st.Finished && js.draftText == "" && c.streamMode() == chatcore.StreamPartial && c.useDrafts(js)
}

// watchDraft starts, for the head job js whose first draft is still to
// come, a goroutine that blocks on its progress stream and, as soon as an
// answer delta is there, has the chat's actor read it and send the draft
// (drawNow): the first draft then follows the model's first text by a
// progress read and a Bot API call, not by up to a progress interval. It
// ends when the draft was shown, the job ended or ctx ends. It runs in the
// chat's actor.
func (c *chat) watchDraft(ctx context.Context, js *jobState) {
	b := c.b
	if js.watch != nil || !c.wantsFirstDraft(js) || !b.drafting.take() {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	js.watch = cancel
	key, id, after := c.key(), js.id, js.after
	go func() {
		defer b.drafting.give()
		defer cancel()
		for wctx.Err() == nil {
			es, err := b.q.ReadProgress(wctx, id, after, progressPage, draftWatchBlock)
			if err != nil {
				if sleep(wctx, time.Second) != nil {
					return
				}
				continue
			}
			if len(es) > 0 {
				after = es[len(es)-1].ID
			}
			text := false
			for _, e := range es {
				text = text || isDelta(e.Data)
			}
			// With text, the actor drafts; without (a read that timed
			// out, or other events), it only checks the watch is still
			// wanted. Either way the watcher waits for it.
			done := make(chan struct{})
			b.serial.do(key, work{fn: func(c *chat) { c.drawNow(ctx, id, text) }, done: func() { close(done) }})
			select {
			case <-done:
			case <-wctx.Done():
				return
			}
		}
	}()
}

// isDelta reports whether a progress entry is a piece of the answer.
func isDelta(data []byte) bool {
	var head struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(data, &head) == nil && head.Schema == queue.DeltaSchema
}

// drawNow reads the job's new progress and sends its draft (text: an
// answer delta arrived), or ends the watch once it is not wanted any
// more. It runs in the chat's actor.
func (c *chat) drawNow(ctx context.Context, id string, text bool) {
	js := c.jobs[id]
	if js == nil || len(c.queue) == 0 || c.queue[0] != id {
		js.stopWatch()
		return
	}
	if text {
		if _, ok := js.readProgress(ctx, c.b); ok && js.st.Started && js.startedAt.IsZero() {
			js.startedAt = c.b.cfg.Now()
		}
		c.draft(ctx, js, c.b.cfg.Now())
	}
	if !c.wantsFirstDraft(js) {
		js.stopWatch()
	}
}

// stopWatch ends the job's draft watcher, if any. js may be nil.
func (js *jobState) stopWatch() {
	if js != nil && js.watch != nil {
		js.watch()
	}
}

// ---- the acknowledging reaction ----

// ackReaction is the reaction set on a message whose job was created (""
// = none).
func (b *Bot) ackReaction() string {
	if r := b.cfg.AckReaction; r != "off" {
		if r == "" {
			return DefaultAckReaction
		}
		return r
	}
	return ""
}

// jobCreated acknowledges the user's message srcMsg of a new job with the
// configured reaction and, for the head job, starts waiting for its
// first text (watchDraft). It runs in the chat's actor.
func (c *chat) jobCreated(ctx context.Context, js *jobState, srcMsg int) {
	if e := c.b.ackReaction(); e != "" {
		c.react(ctx, srcMsg, e)
	}
	if len(c.queue) > 0 && c.queue[0] == js.id {
		c.watchDraft(ctx, js)
	}
}

// react sets the bot's reaction on message msgID (0: none). A reaction is
// a courtesy: a refusal (a chat that allows no reactions, an older Bot
// API) is logged and changes nothing else. It runs in the chat's actor.
func (c *chat) react(ctx context.Context, msgID int, emoji string) {
	if msgID == 0 || emoji == "" || c.b.noReactions.Load() {
		return
	}
	kind, err := c.b.tg.SetReaction(ctx, c.id, msgID, emoji)
	switch {
	case kind == tgOK || kind == tgCanceled:
	case isMethodMissing(err):
		c.b.noReactions.Store(true)
		c.b.log.WithError(err).Info("bot: setMessageReaction is not available; no acknowledging reactions")
	case kind == tgChatGone:
		c.checkSend(ctx, kind, err)
	default:
		c.b.log.WithError(err).WithField("chat_id", c.id).Debug("bot: setting a reaction failed")
	}
}

// ---- provider errors: one notice, then folded ----

// provNotice is the chat's latest provider notice.
type provNotice struct {
	msg  int       // its message (0: not sent)
	key  string    // its text key (chatcore.ProviderTrouble)
	lang string    // its language
	at   time.Time // when it was shown
	n    int       // failed requests folded into it
}

// foldedReaction marks a request whose provider failure was folded into
// the chat's notice.
const foldedReaction = "💔"

// providerNotice rewrites the plan of a job that failed at the model
// provider: the first such failure of a cooldown shows a readable notice
// instead of the raw error; a later one within the cooldown sends nothing
// new but edits the notice to count it, and marks the asking message. It
// reports whether the plan's first message is a new notice (noticeSent
// records it). It runs in the chat's actor.
func (c *chat) providerNotice(ctx context.Context, res queue.Result, plan *chatcore.Plan, lang string, srcMsg int) bool {
	if res.Status != queue.StatusFailed || !plan.Show {
		return false
	}
	key := chatcore.ProviderTrouble(res.Error)
	if key == "" {
		return false
	}
	now := c.b.cfg.Now()
	n := &c.notice
	if n.msg != 0 && n.key == key && chatcore.FoldNotice(n.at, now, providerCooldown) {
		n.n++
		if kind, err := c.b.tg.EditPlain(ctx, c.id, n.msg, chatcore.NoticeText(n.lang, key, n.n, n.at), nil); kind != tgOK {
			c.b.log.WithError(err).WithField("chat_id", c.id).Debug("bot: editing the provider notice failed")
		}
		c.react(ctx, srcMsg, foldedReaction)
		plan.Show = false
		return false
	}
	c.notice = provNotice{key: key, lang: lang, at: now, n: 1}
	plan.Head, plan.Answer = chatcore.NoticeText(lang, key, 1, now), ""
	return true
}

// noticeSent records the message of the notice providerNotice planned.
func (c *chat) noticeSent(planned bool, ids []int) {
	if planned && len(ids) > 0 {
		c.notice.msg = ids[0]
	}
}
