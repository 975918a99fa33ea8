package bot

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/odekrun/odek/bot/chatcore"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/bot/tgformat"
	"github.com/odekrun/odek/queue"
)

// deliveries are the results being delivered, by job id, and the waiters
// of Settle.
type deliveries struct {
	mu       sync.Mutex
	inflight map[string]bool
	idle     chan struct{} // closed by resultsLoop on an empty read with nothing inflight
}

// start marks a result as being delivered; false when it already is.
func (d *deliveries) start(jobID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight[jobID] {
		return false
	}
	if d.inflight == nil {
		d.inflight = map[string]bool{}
	}
	d.inflight[jobID] = true
	return true
}

func (d *deliveries) done(jobID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inflight, jobID)
}

// idleNow wakes Settle's waiters when nothing is being delivered.
func (d *deliveries) idleNow() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.idle != nil && len(d.inflight) == 0 {
		close(d.idle)
		d.idle = nil
	}
}

// wait returns a channel closed at the next idle read.
func (d *deliveries) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	return d.idle
}

// resultsLoop reads results for this front end and delivers each in its
// chat's serial queue.
func (b *Bot) resultsLoop(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		ds, err := b.q.ReadResults(ctx, b.consumer, 16, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			b.setHealth(func(h *healthState) {
				if h.queueDownSince.IsZero() {
					h.queueDownSince = b.cfg.Now()
				}
				h.queueErr = err.Error()
			})
			failures++
			b.log.WithError(err).Warn("bot: reading results failed; backing off")
			if sleep(ctx, tgclient.Backoff(failures, 10*time.Second)) != nil {
				return nil
			}
			continue
		}
		failures = 0
		b.setHealth(func(h *healthState) { h.queueDownSince, h.queueErr = time.Time{}, "" })
		if len(ds) == 0 {
			b.delivery.idleNow()
		}
		for _, d := range ds {
			if !b.delivery.start(d.Result.JobID) {
				continue // handed back to us after the result lease while still being delivered
			}
			b.serial.Do(b.jobKey(d.Result.ChatID, d.Result.JobID), func(c *chat) {
				defer b.delivery.done(d.Result.JobID)
				c.deliver(c.inTopic(ctx), d)
			})
		}
	}
	return nil
}

// deliver sends one result to its chat and acknowledges it. It runs in the
// chat's actor.
func (c *chat) deliver(ctx context.Context, d queue.Delivery) {
	if c.deliverCompact(ctx, d) { // compactjob.go
		return
	}
	b := c.b
	res := d.Result
	chatID := c.id
	log := b.log.WithFields(logrus.Fields{"chat_id": chatID, "job_id": res.JobID, "status": string(res.Status)})
	now := b.cfg.Now()

	js := c.jobs[res.JobID]
	var jt jobTrace
	if js != nil {
		jt = js.trace
	}
	ctx, span := traceDeliver(ctx, jt, res) // tracing.go
	defer span.End()
	c.roll()
	for i, id := range c.queue {
		if id == res.JobID {
			c.queue = append(c.queue[:i:i], c.queue[i+1:]...)
			break
		}
	}
	// The core plans the reply and the books (usage, artifact ids); they
	// are recorded only once the result is settled (see below): a result
	// left for redelivery must not count twice.
	var statusMsg, replyTo, srcMsg int
	f := chatcore.Finished{Lang: "en"}
	if js != nil {
		statusMsg, replyTo, srcMsg = js.statusMsg, js.replyTo, js.srcMsg
		f = chatcore.Finished{Lang: b.lang(js.userID), TimedOut: js.timedOut, Superseded: js.superseded, Uploads: js.uploads, Interrupted: js.interrupted}
	} else {
		replyTo = c.bgReplyTo(res.JobID) // a /bg job answers its message (schedule.go)
	}
	plan := chatcore.PlanResult(b.policy, res, f, c.books.Use, c.nextArt, now)
	lang := f.Lang
	var arts []tgformat.Artifact
	for _, a := range plan.Artifacts {
		arts = append(arts, tgformat.Artifact{ID: a.ID, Name: a.Meta.Name, MediaType: a.Meta.MIME, Bytes: a.Meta.Bytes, SHA256: a.Meta.SHA256})
	}

	if statusMsg != 0 {
		if kind, err := b.tg.Remove(ctx, chatID, statusMsg); kind != tgOK && kind != tgCanceled {
			log.WithError(err).Debug("bot: could not delete the status message")
		}
		c.ledgerDel(ctx, statusMsg)
	}
	c.closeApprovals(ctx, res.JobID, "ap.c.ended")
	// One message per job: the notice, the answer, its artifact lines and
	// the usage footer go out together.
	footer := tgformat.Footer(res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.CostUSD, time.Duration(res.DurationMS)*time.Millisecond)
	if res.NoModel {
		footer = "" // a reminder: no model call, nothing to account for
	}
	notice := c.providerNotice(ctx, res, &plan, lang, srcMsg) // streammode.go: one notice, then folded
	reply := tgformat.Reply{Head: plan.Head, Answer: plan.Answer, Artifacts: arts, Footer: footer}
	chunks := tgformat.FormatReply(reply, tgformat.MaxMessageLen)
	if !plan.Show {
		chunks = nil // the user edited the message: the edited text's job answers
	}
	ack := true
	// Each accepted step is recorded before the next goes out; a result
	// delivered again after a crash skips the steps recorded (sentlog.go).
	// A spoken answer is step 1 whenever the chat wants one; a voice note
	// that carries the answer as its caption covers the text's step too,
	// so a restart after it sends neither again, and one that failed is
	// not recorded, so the text that replaced it is counted as usual.
	sl := c.newSentLog(d, log)
	spoken := spokenReply{rest: chunks}
	if plan.Show && len(chunks) > 0 && c.wantsVoice(js) && !sl.next() {
		spoken = c.speakReply(ctx, js, lang, plan.Answer, chunks, replyTo) // voiceout.go
		if spoken.msgID != 0 {
			for range len(chunks) - len(spoken.rest) {
				sl.next() // the caption is the text
			}
			sl.accepted(ctx, spoken.msgID)
		}
	}
	chunks = spoken.rest
	for i, ch := range chunks {
		if sl.next() {
			continue // accepted before a restart
		}
		to := 0
		if i == 0 && spoken.msgID == 0 {
			to = replyTo // in groups the answer replies to the asking message
		}
		sent, kind, err := b.sendChunk(ctx, chatID, to, ch, nil)
		if kind == tgOK {
			sl.accepted(ctx, sent.MessageID)
			continue
		}
		if kind == tgCanceled {
			return // shutting down: leave the result for redelivery
		}
		if !c.checkSend(ctx, kind, err) {
			break // chat gone: nothing to deliver to; acknowledge
		}
		if kind == tgTransient || kind == tgRetryAfter {
			// Telegram kept failing: leave the result for redelivery
			// (after the result lease) rather than drop the answer.
			log.WithError(err).WithField("chunk", i).Error("bot: delivering the reply failed; it will be retried")
			ack = false
			break
		}
		log.WithError(err).WithField("chunk", i).Error("bot: Telegram refused a reply chunk; skipping it")
	}
	c.noticeSent(notice, sl.ids)
	if ack {
		c.settleBudget(ctx, res, js) // budgets.go: the spend counts once, in the queue's store
		c.books.Settled(res.JobID, plan)
		if js != nil && js.session != "" {
			// The events the last tick did not read (a bounded number of
			// pages: the gauge wants the latest ones).
			for range 10 {
				if n, ok := js.readProgress(ctx, c.b); !ok || n < progressPage {
					break
				}
			}
			c.books.Gauge = c.books.Gauge.Record(js.session, js.st.CI, now)
		}
		c.nextArt = max(c.nextArt, plan.NextArt)
		c.rememberAnswer(srcMsg, sl.ids)
		for _, a := range plan.Artifacts {
			c.arts = append(c.arts, chatArtifact{id: a.ID, meta: a.Meta})
		}
		if over := len(c.arts) - maxChatArtifacts; over > 0 {
			c.arts = append([]chatArtifact(nil), c.arts[over:]...)
		}
	}
	if ack && plan.Show && b.cfg.ArtifactDir != "" && b.cfg.SendArtifacts > 0 {
		// Files out: the first artifacts go into the chat with the answer.
		sent := 0
		for _, pa := range plan.Artifacts {
			a := chatArtifact{id: pa.ID, meta: pa.Meta}
			if sent >= b.cfg.SendArtifacts {
				break
			}
			if a.meta.Bytes > b.cfg.SendArtifactBytes {
				continue // too large to send unasked: /artifact gives the reason
			}
			if sl.next() {
				sent++ // sent before a restart
				continue
			}
			if msg := c.sendArtifactFile(ctx, lang, a.id, a.meta, b.cfg.SendArtifactBytes, true); msg != "" {
				log.WithField("artifact", a.id).Debug("bot: an artifact was not sent with the answer: " + msg)
				continue
			}
			sl.accepted(ctx, 0)
			sent++
		}
	}
	if spoken.notice != "" && ack {
		c.reply(ctx, spoken.notice)
	}
	if plan.Warn != "" && ack && !sl.next() {
		_, kind, err := b.tg.SendPlain(ctx, chatID, plan.Warn, nil)
		if c.checkSend(ctx, kind, err) && kind == tgOK {
			sl.accepted(ctx, 0)
		}
	}
	if ack {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := b.q.AckResult(actx, d); err != nil {
			log.WithError(err).Error("bot: acknowledging the result failed; another front end may deliver it again")
		}
	}
	js.stopWatch() // streammode.go
	delete(c.jobs, res.JobID)
	if ack {
		b.topics.drop(res.JobID)
	}
	c.books.Ended(res.JobID) // a result left for redelivery holds nothing meanwhile
	log.Info("bot: result delivered")
	if ack {
		c.leftovers(ctx, js) // busy.go: steered messages the job did not take
		c.startHeld(ctx)     // its reservation is released: a held message may start
	}
}

// ---- progress ----

// progressLoop asks every chat with unfinished jobs, each
// ProgressInterval, to read its head job's progress, edit its status
// message (at most one edit per chat per interval), renew the typing
// action and cancel a job over AgentTimeout. A chat still busy with the
// previous tick is not asked again.
func (b *Bot) progressLoop(ctx context.Context) error {
	t := time.NewTicker(b.cfg.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		b.progressTick(ctx)
	}
}

func (b *Bot) progressTick(ctx context.Context) {
	if now := b.cfg.Now(); now.Sub(b.lastPrune) >= pruneEvery {
		b.users.prune(now)
		for _, id := range b.serial.keys(false) {
			b.serial.Do(id, func(c *chat) { c.prune(now) })
		}
		b.lastPrune = now
	}
	for _, id := range b.serial.keys(true) {
		b.serial.tick(id, func(c *chat) { c.progress(c.inTopic(ctx)) })
	}
}

// progress reads the head job's new progress entries and refreshes the
// status. It runs in the chat's actor.
func (c *chat) progress(ctx context.Context) {
	b := c.b
	if len(c.jobs) == 0 {
		c.startHeld(ctx) // held requests restored with no job left to wait for
	}
	if len(c.queue) > 0 {
		if js := c.jobs[c.queue[0]]; js != nil {
			if _, ok := js.readProgress(ctx, c.b); ok && js.st.Started && js.startedAt.IsZero() {
				js.startedAt = b.cfg.Now()
			}
		}
	}
	c.refreshStatus(ctx)
}

// progressPage is how many progress entries one read takes.
const progressPage = 200

// readProgress folds the job's progress entries since the last read (at
// most progressPage) into its status. It reports how many it read and
// whether the read worked.
func (js *jobState) readProgress(ctx context.Context, b *Bot) (int, bool) {
	entries, err := b.q.ReadProgress(ctx, js.id, js.after, progressPage, 0)
	if err != nil {
		if ctx.Err() == nil {
			b.log.WithError(err).WithField("job_id", js.id).Debug("bot: reading progress failed")
		}
		return 0, false
	}
	for _, e := range entries {
		js.st = js.st.Apply(e.Data)
		js.after = e.ID
	}
	return len(entries), true
}

// editInterval is the least time between two status edits in a chat:
// interval in private chats, three times it in groups (Telegram allows a
// group about 20 messages a minute). Pure.
func editInterval(chatID int64, interval time.Duration) time.Duration {
	if chatID < 0 {
		return 3 * interval
	}
	return interval
}

// refreshStatus sends a due first status message or edits one whose text
// changed (at most one per chat per edit interval), renews typing and
// enforces the run timeout. It runs in the chat's actor.
func (c *chat) refreshStatus(ctx context.Context) {
	b := c.b
	chatID := c.id
	now := b.cfg.Now()
	if len(c.queue) == 0 {
		return
	}
	// "typing…" shows as soon as the head job works, whether or not its
	// status message is out yet (a delayed first status, issue 26 point
	// 8) and whatever the edit interval: it is not an edit.
	if js := c.jobs[c.queue[0]]; js != nil && !js.stopped && js.st.Started && !js.st.Finished && now.Sub(c.lastTyping) >= typingEvery {
		c.lastTyping = now
		_, kind, err := b.tg.Call(ctx, tgbotapi.NewChatAction(chatID, tgbotapi.ChatTyping), false)
		c.checkSend(ctx, kind, err)
	}
	if js := c.jobs[c.queue[0]]; js != nil && !js.stopped && !js.st.Finished {
		c.draft(ctx, js, now) // stream.go: not an edit, not gated by one
		c.watchDraft(ctx, js) // streammode.go: a queued job that became the head
	}
	if now.Sub(c.lastEdit) < editInterval(chatID, b.cfg.ProgressInterval) {
		return
	}
	var expired []string
	for pos, id := range c.queue {
		js := c.jobs[id]
		if js != nil && js.statusMsg == 0 && !js.stopped && !js.statusDue.IsZero() && !now.Before(js.statusDue) {
			js.statusDue = time.Time{}
			js.lastText = js.statusText(pos, now)
			c.lastEdit = now
			m, kind, err := b.tg.SendPlainReply(ctx, chatID, js.replyTo, js.lastText, nil)
			if c.checkSend(ctx, kind, err) && kind == tgOK {
				js.statusMsg = m.MessageID
				c.ledgerPutMsg(ctx, js.statusMsg, js.id, js.lang)
			}
			break
		}
		if js == nil || js.statusMsg == 0 || js.stopped {
			continue
		}
		if pos == 0 && js.st.Started && !js.st.Finished {
			if !js.timedOut && !js.startedAt.IsZero() && now.Sub(js.startedAt) > b.cfg.AgentTimeout {
				js.timedOut = true
				expired = append(expired, id)
			}
		}
		text := js.statusText(pos, now)
		if pos == 0 {
			text = c.stream(ctx, js, text, now) // stream.go
		}
		if text != js.lastText {
			js.lastText = text
			c.lastEdit = now
			c.editStatus(ctx, js.statusMsg, text)
			break // one edit per chat per interval
		}
	}
	for _, id := range expired {
		b.log.WithFields(logrus.Fields{"job_id": id, "timeout": b.cfg.AgentTimeout.String()}).Warn("bot: job over ODEK_TELEGRAM_AGENT_TIMEOUT; canceling")
		if err := b.q.Cancel(ctx, id); err != nil && !errors.Is(err, queue.ErrNotFound) && ctx.Err() == nil {
			b.log.WithError(err).WithField("job_id", id).Warn("bot: cancel after timeout failed")
		}
		c.closeApprovals(ctx, id, "ap.c.timeout")
	}
}

// editStatus edits a status message. A rate-limited or failed edit is
// dropped: the next edit after the wait carries newer text.
func (c *chat) editStatus(ctx context.Context, msg int, text string) {
	kind, err := c.b.tg.EditStatus(ctx, c.id, msg, text)
	switch kind {
	case tgMessageGone:
	case tgRetryAfter, tgTransient:
		_, wait := classify(err)
		if js := c.jobByStatus(msg); js != nil {
			js.lastText = ""
		}
		if wait > 0 {
			c.lastEdit = c.b.cfg.Now().Add(wait) // honour retry_after for this chat's edits
		}
	default:
		c.checkSend(ctx, kind, err)
	}
}

// ---- health and webhook ----

// Healthy reports whether the bot is serving: the queue answers (or has
// failed for less than 15 s), and updates arrive (the last long poll
// succeeded within two poll timeouts and no other instance holds the
// token) or the webhook server runs. The reason says why not.
func (b *Bot) Healthy() (bool, string) {
	b.health.mu.Lock()
	h := b.health.h
	b.health.mu.Unlock()
	switch {
	case !h.queueDownSince.IsZero() && b.cfg.Now().Sub(h.queueDownSince) > queueGrace:
		return false, "queue unreachable since " + h.queueDownSince.UTC().Format(time.RFC3339) + ": " + h.queueErr
	case h.webhook:
		return true, "webhook"
	case h.conflict:
		return false, ErrConflict.Error()
	case !h.started:
		return false, "not connected to Telegram yet"
	case b.cfg.Now().Sub(h.lastPoll) > 2*b.cfg.PollTimeout+30*time.Second:
		return false, "no successful getUpdates since " + h.lastPoll.UTC().Format(time.RFC3339) + ": " + h.lastErr
	}
	return true, "polling"
}

// queueGrace is how long the queue may fail before /healthz says so.
const queueGrace = 15 * time.Second

// HealthHandler serves GET /healthz: 200 "ok" when Healthy, else 503
// with the reason.
func (b *Bot) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ok, why := b.Healthy()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "unhealthy:", why)
			return
		}
		fmt.Fprintln(w, "ok:", why)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.Registry(), promhttp.HandlerOpts{}))
	return mux
}

// webhookSecretHeader carries the secret_token given to setWebhook.
const webhookSecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxWebhookBody caps one webhook request body.
const maxWebhookBody = 1 << 20

// WebhookHandler accepts POSTed updates whose secret header matches the
// configured secret (constant-time compare); others get 401.
func (b *Bot) WebhookHandler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		got := r.Header.Get(webhookSecretHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(b.cfg.WebhookSecret)) != 1 {
			b.log.WithField("remote", r.RemoteAddr).Warn("bot: webhook request with a wrong or missing secret token rejected")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody))
		var u tgbotapi.Update
		if err == nil {
			err = json.Unmarshal(raw, &u)
		}
		if err != nil {
			http.Error(w, "bad update", http.StatusBadRequest)
			return
		}
		b.handleUpdate(withExtra(ctx, extraOfUpdate(raw)), u, threadOfUpdate(raw))
		w.WriteHeader(http.StatusOK)
	})
}

// serveWebhook registers the webhook with Telegram and serves it.
func (b *Bot) serveWebhook(ctx context.Context) error {
	u, err := url.Parse(b.cfg.WebhookURL)
	if err != nil {
		return fmt.Errorf("%w: webhook URL: %v", ErrConfig, err)
	}
	params := tgbotapi.Params{"url": b.cfg.WebhookURL, "secret_token": b.cfg.WebhookSecret}
	params.AddInterface("allowed_updates", []string{"message", "edited_message", "callback_query"})
	if _, err := b.tg.Raw(ctx, "setWebhook", params); err != nil {
		return fmt.Errorf("bot: setWebhook: %w", err)
	}
	ln, err := net.Listen("tcp", b.cfg.WebhookListen)
	if err != nil {
		return fmt.Errorf("bot: webhook listen on %s: %w", b.cfg.WebhookListen, err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	mux := http.NewServeMux()
	mux.Handle(path, b.WebhookHandler(ctx))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	b.setHealth(func(h *healthState) { h.webhook, h.started = true, true })
	b.log.WithFields(logrus.Fields{"addr": ln.Addr().String(), "path": path}).Info("bot: serving the webhook")
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bot: webhook server: %w", err)
	}
	return nil
}
