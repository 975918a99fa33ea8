package bot

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/queue"
)

// Approvals that survive (issue 26, point 6).
//
// A worker's question is shown in the asking chat and, when the operator
// names approvers (Config.Approvers), in each approver's private chat with
// the bot, all with the same buttons: "Approve once", "Deny" and, when the
// question allows it, "Allow for this session". The asking user and the
// approvers may press them; anyone else gets "not yours". Every message
// showing the question is noted in the queue (queue.ApprovalStates), and
// the question itself lives there until it is answered or expires, so a
// press in another chat (an approver's private chat), or after the bot
// restarted, still finds the question, answers it and closes every copy.
//
// "Allow for this session" allows the question and records a grant in the
// queue: until the conversation changes (/new starts another session) and
// for at most queue.SessionGrantTTL, a question with exactly the same text
// in the same session — same tool, same danger class, same shown fields,
// for the shell the same command line — is allowed by the worker without
// asking (worker/approve.go). Questions whose text does not pin the call
// down (a value clipped with "…", or masked by the redactor) never get the
// button (queue.SessionGrantable).
//
// At the deadline (the worker's ODEK_APPROVAL_TIMEOUT, default 30 min) the
// worker denies the call with "nobody answered in time" and the prompts
// say "⌛ No answer in time — denied."

// Choices of an approval button: the last byte of its callback data.
const (
	choiceOnce    = 'y'
	choiceDeny    = 'n'
	choiceSession = 's'
)

// approvalPressData is the callback data of an approval button:
// "ap:<id>:y|n|s" (at most 37 bytes of Telegram's 64 for a 32-digit id).
func approvalPressData(id string, choice byte) string { return "ap:" + id + ":" + string(choice) }

// parseApprovalPress is the inverse of approvalPressData. Pure; the data
// comes from Telegram and is untrusted.
func parseApprovalPress(s string) (id string, choice byte, ok bool) {
	if id, allow, ok := parseApprovalData(s); ok {
		if allow {
			return id, choiceOnce, true
		}
		return id, choiceDeny, true
	}
	base, found := strings.CutSuffix(s, ":s")
	if !found {
		return "", 0, false
	}
	if id, _, ok := parseApprovalData(base + ":y"); ok {
		return id, choiceSession, true
	}
	return "", 0, false
}

// approvalKeyboard is the prompt's buttons.
func approvalKeyboard(lang, id string, session bool) tgbotapi.InlineKeyboardMarkup {
	rows := [][]tgbotapi.InlineKeyboardButton{tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData(tr(lang, "ap.approve"), approvalPressData(id, choiceOnce)),
		tgbotapi.NewInlineKeyboardButtonData(tr(lang, "ap.deny"), approvalPressData(id, choiceDeny)))}
	if session {
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(
			tgbotapi.NewInlineKeyboardButtonData(tr(lang, "ap.session"), approvalPressData(id, choiceSession))))
	}
	return tgbotapi.NewInlineKeyboardMarkup(rows...)
}

// isApprover reports whether user is a named approver.
func (b *Bot) isApprover(user int64) bool { return user != 0 && slices.Contains(b.cfg.Approvers, user) }

// approverPress reports whether cq is an approver pressing an approval
// button: approvers may answer even where the allowlist does not let them
// use the bot (pressApproval checks the rest).
func (b *Bot) approverPress(cq *tgbotapi.CallbackQuery) bool {
	_, _, ok := parseApprovalPress(cq.Data)
	return ok && b.isApprover(cq.From.ID)
}

// approvalStates is the queue's approval state, nil when it keeps none.
func (b *Bot) approvalStates() queue.ApprovalStates {
	st, _ := b.q.(queue.ApprovalStates)
	return st
}

// sessionOffered reports whether "Allow for this session" is offered for a.
func (b *Bot) sessionOffered(a queue.Approval) bool {
	return a.SessionID != "" && queue.SessionGrantable(a.Question) && b.approvalStates() != nil
}

// ask shows an approval question in the asking chat and the approvers'
// private chats, notes the messages in the queue and schedules the
// expiry edit. It runs in the asking chat's actor.
func (c *chat) ask(ctx context.Context, a queue.Approval) {
	b := c.b
	js := c.jobs[a.JobID]
	requester := a.UserID
	who := ""
	if js != nil {
		if requester == 0 {
			requester = js.userID
		}
		who = js.userName
	}
	lang := b.lang(requester)
	if who == "" && requester != 0 {
		who = tr(lang, "ap.user", requester)
	}
	deadline := a.Deadline.UTC().Format("15:04:05")
	wait := chatcore.HumanWait(max(time.Until(a.Deadline), time.Second))
	answerable := requester != 0 || len(b.cfg.Approvers) > 0
	session := b.sessionOffered(a)
	var footer string
	switch {
	case requester != 0 && len(b.cfg.Approvers) > 0:
		footer = tr(lang, "ap.onlyor", who, deadline, wait)
	case requester != 0:
		footer = tr(lang, "ap.only", who, deadline, wait)
	case answerable:
		footer = tr(lang, "ap.approvers", deadline, wait)
	default:
		footer = tr(lang, "ap.nobody", deadline)
	}
	q := approvalTextIn(lang, a.Question)
	var markup any
	if answerable {
		markup = approvalKeyboard(lang, a.ID, session)
	}
	var replyTo int
	if js != nil {
		replyTo = js.replyTo
	}
	st := &approvalState{a: a, requester: requester, shown: q, lang: lang}
	tctx := c.inTopic(ctx)
	m, kind, err := b.tg.SendPlainReply(tctx, c.id, replyTo, tr(lang, "ap.needed")+"\n\n"+q+"\n\n"+footer, markup)
	if kind == tgOK {
		st.prompts = append(st.prompts, queue.ApprovalPrompt{ChatID: c.id, MessageID: m.MessageID, Lang: lang})
	} else {
		c.checkSend(tctx, kind, err)
	}
	if answerable {
		for _, ap := range b.cfg.Approvers {
			if ap == c.id {
				continue // the asking chat is this approver's own private chat
			}
			al := b.lang(ap)
			text := tr(al, "ap.needed") + " — " + tr(al, "ap.dm", c.id, nonEmptyStr(who, "?")) + "\n\n" + approvalTextIn(al, a.Question) + "\n\n" + tr(al, "ap.dmonly", deadline, wait)
			m, kind, err := b.tg.SendPlain(ctx, ap, text, approvalKeyboard(al, a.ID, session))
			if kind != tgOK {
				b.log.WithError(err).WithFields(logrus.Fields{"approver": ap, "approval": a.ID}).Warn("bot: the approval prompt could not reach an approver's private chat (they must have started the bot)")
				continue
			}
			st.prompts = append(st.prompts, queue.ApprovalPrompt{ChatID: ap, MessageID: m.MessageID, Lang: al})
		}
	}
	if len(st.prompts) == 0 {
		return // nowhere shown: the worker denies at the deadline
	}
	if s := b.approvalStates(); s != nil {
		// The messages exist: note them even when the bot is stopping.
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, p := range st.prompts {
			if err := s.AddApprovalPrompt(nctx, a.ID, p); err != nil && !errors.Is(err, queue.ErrNotFound) {
				b.log.WithError(err).WithField("approval", a.ID).Warn("bot: noting an approval prompt in the queue failed; after a restart this copy is not closed by a press elsewhere")
			}
		}
	}
	c.approvals[a.ID] = st
	if js != nil {
		js.waiting++
		js.lastText = "" // the status says it waits for the approval
	}
	time.AfterFunc(max(time.Until(a.Deadline), 0), func() {
		if ctx.Err() != nil {
			return
		}
		b.serial.Do(c.key(), func(c *chat) {
			// With the state in the queue, sweepApprovals closes the
			// prompts (whichever bot runs then); else this bot does.
			if st := c.settle(a.ID); st != nil && b.approvalStates() == nil {
				c.editPrompts(ctx, st.a, st.prompts, func(l string) string { return tr(l, "ap.expired") })
			}
		})
	})
}

// sweepApprovals closes the prompts of questions that expired unanswered:
// every copy says "⌛ No answer in time — denied." The queue hands each
// expired question to one bot, so prompts shown by a bot that restarted
// since (or by another bot) are closed too. It runs in approvalsLoop.
func (b *Bot) sweepApprovals(ctx context.Context) {
	s := b.approvalStates()
	if s == nil {
		return
	}
	exp, err := s.ExpiredApprovals(ctx, 16)
	if err != nil {
		if ctx.Err() == nil {
			b.log.WithError(err).Warn("bot: reading expired approvals failed")
		}
		return
	}
	for _, e := range exp {
		b.serial.Do(b.jobKey(e.Approval.ChatID, e.Approval.JobID), func(c *chat) {
			prompts := e.Prompts
			if st := c.settle(e.Approval.ID); st != nil && len(prompts) == 0 {
				prompts = st.prompts // not noted in the queue (a failed note)
			}
			c.editPrompts(ctx, e.Approval, prompts, func(l string) string { return tr(l, "ap.expired") })
		})
	}
}

func nonEmptyStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// editPrompts replaces every message showing a with the question and an
// outcome (in each message's language), without buttons. Failures are
// logged: a prompt deleted by its chat is simply gone.
func (c *chat) editPrompts(ctx context.Context, a queue.Approval, prompts []queue.ApprovalPrompt, outcome func(lang string) string) {
	b := c.b
	for _, p := range prompts {
		text := "🔐 " + approvalTextIn(p.Lang, a.Question) + "\n\n" + outcome(p.Lang)
		if kind, err := b.tg.EditPlain(ctx, p.ChatID, p.MessageID, text, nil); kind != tgOK && kind != tgMessageGone && kind != tgCanceled {
			b.log.WithError(err).WithFields(logrus.Fields{"chat_id": p.ChatID, "approval": a.ID}).Warn("bot: closing an approval prompt failed")
		}
	}
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
// and every copy says why (why is a texts key). It runs in the chat's
// actor.
func (c *chat) closeApprovals(ctx context.Context, jobID, why string) {
	b := c.b
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
		c.editPrompts(ctx, st.a, st.prompts, func(l string) string { return tr(l, why) })
	}
}

// pressApproval settles an approval button press. The question is this
// actor's when it showed it; otherwise (a press in an approver's private
// chat, or after a restart) it is read from the queue. Only the asking
// user and the named approvers may answer, and only from the asking chat
// or their own private chat. It runs in the pressed chat's actor.
func (c *chat) pressApproval(ctx context.Context, cq *tgbotapi.CallbackQuery, lang string) {
	b := c.b
	id, choice, ok := parseApprovalPress(cq.Data)
	if !ok || b.aq == nil {
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.unknown"), false)
		return
	}
	log := b.log.WithFields(logrus.Fields{"user_id": cq.From.ID, "approval": id})
	st := c.approvals[id]
	if st != nil && st.settled {
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.closedq"), false)
		return
	}
	var a queue.Approval
	var prompts []queue.ApprovalPrompt
	var requester int64
	if st != nil {
		a, prompts, requester = st.a, st.prompts, st.requester
	} else {
		s := b.approvalStates()
		if s == nil {
			b.answerCallback(ctx, cq.ID, tr(lang, "ap.closedq"), false)
			return
		}
		var err error
		if a, err = s.PendingApproval(ctx, id); err != nil {
			if !errors.Is(err, queue.ErrNotFound) {
				log.WithError(err).Warn("bot: reading an approval from the queue failed")
			}
			b.answerCallback(ctx, cq.ID, tr(lang, "ap.closedq"), false)
			return
		}
		prompts, _ = s.ApprovalPrompts(ctx, id)
		requester = a.UserID
	}
	pressChat := cq.Message.Chat.ID
	approver := b.isApprover(cq.From.ID)
	switch {
	case pressChat != a.ChatID && !(approver && pressChat == cq.From.ID):
		// A prompt copied elsewhere, or forged data: not a place to answer.
		log.Warn("bot: approval answer from a chat that neither asked nor is an approver's own; ignored")
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.notyours"), true)
		return
	case !approver && (requester == 0 || cq.From.ID != requester):
		log.Warn("bot: approval answer from a user other than the requester or an approver ignored")
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.notyours"), true)
		return
	case choice == choiceSession && !b.sessionOffered(a):
		b.answerCallback(ctx, cq.ID, tr(lang, "ap.unknown"), false)
		return
	}
	allow := choice != choiceDeny
	var err error
	if choice == choiceSession {
		// The grant first: the same question asked again by this job
		// right after the answer must find it.
		err = b.approvalStates().GrantSession(ctx, a.SessionID, a.Question, queue.SessionGrantTTL)
	}
	if err == nil {
		err = b.aq.Answer(ctx, id, allow)
	}
	name := displayName(cq.From)
	var key string
	switch {
	case errors.Is(err, queue.ErrNotFound):
		key = "ap.toolate"
	case err != nil:
		log.WithError(err).Error("bot: recording the approval answer failed")
		key = "ap.norecord"
	case choice == choiceSession:
		key = "ap.sessioned"
		log.WithField("session", a.SessionID).Info("bot: approval allowed for the session")
	case allow:
		key = "ap.approved"
	default:
		key = "ap.denied"
	}
	outcome := func(l string) string {
		if strings.HasPrefix(key, "ap.t") || key == "ap.norecord" {
			return tr(l, key)
		}
		return tr(l, key, name)
	}
	b.answerCallback(ctx, cq.ID, outcome(lang), false)
	if !slices.ContainsFunc(prompts, func(p queue.ApprovalPrompt) bool {
		return p.ChatID == pressChat && p.MessageID == cq.Message.MessageID
	}) {
		prompts = append(prompts, queue.ApprovalPrompt{ChatID: pressChat, MessageID: cq.Message.MessageID, Lang: lang})
	}
	c.editPrompts(ctx, a, prompts, outcome)
	if st != nil {
		c.settle(id)
		return
	}
	// The asking chat's actor forgets it (its prompts are edited already).
	b.serial.Do(b.jobKey(a.ChatID, a.JobID), func(oc *chat) { oc.settle(id) })
}
