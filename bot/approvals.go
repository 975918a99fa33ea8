package bot

import (
	"context"
	"errors"
	"fmt"
	"github.com/odekrun/odek/bot/chatcore"
	"sort"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/queue"
)

// ---- approvals ----

func (b *Bot) approvalsLoop(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		as, err := b.aq.ReadApprovals(ctx, b.consumer, 16, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			b.log.WithError(err).Warn("bot: reading approvals failed; backing off")
			if sleep(ctx, tgclient.Backoff(failures, 10*time.Second)) != nil {
				return nil
			}
			continue
		}
		failures = 0
		for _, a := range as {
			b.serial.Do(b.jobKey(a.ChatID, a.JobID), func(c *chat) { c.ask(c.inTopic(ctx), a) })
		}
	}
	return nil
}

// approvalData is the callback data of an approval button: "ap:<id>:y|n"
// (at most 37 bytes of Telegram's 64).
func approvalData(id string, allow bool) string {
	if allow {
		return "ap:" + id + ":y"
	}
	return "ap:" + id + ":n"
}

// parseApprovalData is the inverse of approvalData. Pure; the data comes
// from Telegram and is untrusted.
func parseApprovalData(s string) (id string, allow, ok bool) {
	rest, found := strings.CutPrefix(s, "ap:")
	if !found || len(rest) < 3 || len(rest) > 64 {
		return "", false, false
	}
	id, ans := rest[:len(rest)-2], rest[len(rest)-2:]
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false, false
		}
	}
	switch ans {
	case ":y":
		return id, true, id != ""
	case ":n":
		return id, false, id != ""
	}
	return "", false, false
}

// classWords says in chat words what a danger class of a tool call means
// (internal/tools' classes: texts "class.<name>"); "" for another class.
func classWords(lang, class string) string {
	if _, ok := chatcore.Lookup("en", "class."+class); !ok {
		return ""
	}
	return tr(lang, "class."+class)
}

// approvalText renders a worker's approval question in chat words. The
// question is the tool policy's terminal prompt,
//
//	odek: allow shell (code_execution, argv0=python3, command=python3 x.py)? [y/N]
//
// whose summary values are already redacted by the tool policy; it is
// shown as "what, class (meaning), then one line per summary field".
// Questions of another shape are shown cleaned, without "[y/N]". Pure.
func approvalText(question string) string { return approvalTextIn("en", question) }

// approvalTextIn is approvalText in lang.
func approvalTextIn(lang, question string) string {
	q := oneLineKeepBreaks(question, 1500)
	q = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), "[y/N]"))
	body, ok := strings.CutPrefix(q, "odek: allow ")
	open := strings.IndexByte(body, '(')
	if !ok || open <= 0 || !strings.HasSuffix(body, ")?") {
		return q
	}
	tool := strings.TrimSpace(body[:open])
	fields := splitSummary(body[open+1 : len(body)-2])
	if len(fields) == 0 {
		return q
	}
	class := fields[0]
	var b strings.Builder
	b.WriteString(tr(lang, "ap.wants", tool) + "\n" + tr(lang, "ap.class", class))
	if w := classWords(lang, class); w != "" {
		fmt.Fprintf(&b, " (%s)", w)
	}
	kv := fields[1:]
	sort.SliceStable(kv, func(i, j int) bool { return summaryRank(kv[i]) < summaryRank(kv[j]) })
	for _, f := range kv {
		k, v, _ := strings.Cut(f, "=")
		fmt.Fprintf(&b, "\n%s: %s", strings.ReplaceAll(k, "_", " "), v)
	}
	return b.String()
}

// summaryRank puts the fields a person decides on first.
func summaryRank(f string) int {
	k, _, _ := strings.Cut(f, "=")
	switch k {
	case "command", "cmd", "command_line", "argv":
		return 0
	case "argv0", "path", "host", "url":
		return 1
	}
	return 2
}

// splitSummary splits "a, k=v, k2=v2" at the ", " before each key.
func splitSummary(s string) []string {
	parts := strings.Split(s, ", ")
	var out []string
	for _, p := range parts {
		if len(out) > 1 && !strings.Contains(p, "=") {
			out[len(out)-1] += ", " + p // a value with ", " in it
			continue
		}
		out = append(out, strings.TrimSpace(p))
	}
	return out
}

// ask shows an approval question with Approve once / Deny buttons that
// only the job's requester may press, and schedules the timeout edit. It
// runs in the chat's actor; the job is looked up in this chat only.
func (c *chat) ask(ctx context.Context, a queue.Approval) {
	b := c.b
	var requester int64
	who := ""
	lang := "en"
	js := c.jobs[a.JobID]
	if js != nil {
		requester, who, lang = js.userID, js.userName, b.lang(js.userID)
	}
	deadline := a.Deadline.UTC().Format("15:04:05")
	q := approvalTextIn(lang, a.Question)
	var text string
	var markup any
	if requester != 0 {
		text = tr(lang, "ap.needed") + "\n\n" + q + "\n\n" + tr(lang, "ap.only", who, deadline, chatcore.HumanWait(max(time.Until(a.Deadline), time.Second)))
		markup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
			tgbotapi.NewInlineKeyboardButtonData(tr(lang, "ap.approve"), approvalData(a.ID, true)),
			tgbotapi.NewInlineKeyboardButtonData(tr(lang, "ap.deny"), approvalData(a.ID, false))))
	} else {
		text = tr(lang, "ap.needed") + "\n\n" + q + "\n\n" + tr(lang, "ap.nobody", deadline)
	}
	var replyTo int
	if js != nil {
		replyTo = js.replyTo
	}
	m, kind, err := b.tg.SendPlainReply(ctx, c.id, replyTo, text, markup)
	if !c.checkSend(ctx, kind, err) || kind != tgOK {
		return
	}
	st := &approvalState{a: a, requester: requester, msgID: m.MessageID, shown: q, lang: lang}
	c.approvals[a.ID] = st
	if js := c.jobs[a.JobID]; js != nil {
		js.waiting++
		js.lastText = "" // the status says it waits for the approval
	}
	wait := time.Until(a.Deadline)
	time.AfterFunc(max(wait, 0), func() {
		if ctx.Err() != nil {
			return
		}
		b.serial.Do(c.key(), func(c *chat) {
			if c.settle(a.ID) != nil {
				b.tg.EditPlain(ctx, c.id, st.msgID, "🔐 "+q+"\n\n"+tr(lang, "ap.expired"), nil)
			}
		})
	})
}

// settle marks an approval answered and forgets it; it returns the
// approval when it was still open, nil when it was settled already.
func (c *chat) settle(id string) *approvalState {
	st := c.approvals[id]
	if st == nil || st.settled {
		return nil
	}
	st.settled = true
	delete(c.approvals, id)
	if js := c.jobs[st.a.JobID]; js != nil && js.waiting > 0 {
		js.waiting--
		js.lastText = ""
	}
	return st
}

// closeApprovals closes the open approval prompts of one job (jobID) or of
// every job of the chat (jobID ""): the question is denied on the queue
// (the job is over or going away; fail closed), the buttons are removed
// and the prompt says why (why is a texts key, shown in the prompt's
// language). It runs in the chat's actor.
func (c *chat) closeApprovals(ctx context.Context, jobID, why string) {
	b, chatID := c.b, c.id
	var ids []string
	for id, st := range c.approvals {
		if (jobID == "" || st.a.JobID == jobID) && !st.settled {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		st := c.settle(id)
		if st == nil {
			continue
		}
		if b.aq != nil {
			if err := b.aq.Answer(context.WithoutCancel(ctx), id, false); err != nil && !errors.Is(err, queue.ErrNotFound) {
				b.log.WithError(err).WithField("approval", id).Warn("bot: denying a closed approval failed; it is denied at its deadline")
			}
		}
		if kind, err := b.tg.EditPlain(ctx, chatID, st.msgID, "🔐 "+st.shown+"\n\n"+tr(st.lang, why), nil); kind != tgOK && kind != tgMessageGone {
			c.checkSend(ctx, kind, err)
		}
	}
}

// oneLineKeepBreaks cleans untrusted multi-line text for plain display:
// control characters other than line breaks removed, at most max
// characters.
func oneLineKeepBreaks(s string, max int) string {
	lines := strings.Split(cleanText(s), "\n")
	for i := range lines {
		lines[i] = oneLine(lines[i], max)
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	if r := []rune(out); len(r) > max {
		out = string(r[:max-1]) + "…"
	}
	return out
}

func (b *Bot) answerCallback(ctx context.Context, id, text string, alert bool) {
	cb := tgbotapi.NewCallback(id, text)
	cb.ShowAlert = alert
	if _, kind, err := b.tg.Call(ctx, cb, false); kind != tgOK && kind != tgCanceled {
		b.log.WithError(err).Debug("bot: answerCallbackQuery failed")
	}
}

// handleCallback settles an approval button press. It runs in the chat's
// actor: only this chat's prompts can be answered from it.
func (c *chat) handleCallback(ctx context.Context, cq *tgbotapi.CallbackQuery) {
	ctx = c.inTopic(ctx)
	b := c.b
	lang := langOf(cq.From.LanguageCode)
	if i, ok := parseModelData(cq.Data); ok {
		c.pressModel(ctx, cq, lang, i)
		return
	}
	if c.pressSchedule(ctx, cq, lang) {
		return // schedule.go: a /schedule list button
	}
	id, allow, ok := parseApprovalData(cq.Data)
	if !ok || b.aq == nil {
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.unknown"), false)
		return
	}
	st := c.approvals[id]
	var settled bool
	if st != nil {
		settled = st.settled
	}
	switch {
	case st == nil || settled:
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.closedq"), false)
		return
	case cq.From.ID != st.requester:
		b.log.WithFields(logrus.Fields{"user_id": cq.From.ID, "approval": id}).Warn("bot: approval answer from a user other than the requester ignored")
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.notyours"), true)
		return
	}
	err := b.aq.Answer(ctx, id, allow)
	c.settle(id)
	var outcome string
	switch {
	case errors.Is(err, queue.ErrNotFound):
		outcome = tr(st.lang, "ap.toolate")
	case err != nil:
		b.log.WithError(err).WithField("approval", id).Error("bot: recording the approval answer failed")
		outcome = tr(st.lang, "ap.norecord")
	case allow:
		outcome = tr(st.lang, "ap.approved", displayName(cq.From))
	default:
		outcome = tr(st.lang, "ap.denied", displayName(cq.From))
	}
	b.answerCallback(ctx, cq.ID, outcome, false)
	kind, eerr := b.tg.EditPlain(ctx, cq.Message.Chat.ID, st.msgID, "🔐 "+st.shown+"\n\n"+outcome, nil)
	if kind != tgOK && kind != tgMessageGone {
		c.checkSend(ctx, kind, eerr)
	}
}
