package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
	"github.com/sirupsen/logrus"
)

// Work that starts without a message (docs/SCHEDULES.md): /schedule,
// /remind, /tz, /bg, /jobs and /stop <id>. The schedules live in the
// schedule.Service of Config.Schedules (the Redis store beside the queue,
// or the embedded store); every call names the asking chat as the owner,
// so a chat never sees or changes another chat's schedules. The fires
// themselves are ordinary jobs whose results come back like any other.

// scheduleCommands are the commands of this file, for the command menu.
var scheduleCommands = []tgbotapi.BotCommand{
	{Command: "schedule", Description: "List, add, pause, resume or delete schedules"},
	{Command: "remind", Description: "Remind me: /remind in 20m <text>"},
	{Command: "tz", Description: "Time zone of this chat's schedules"},
	{Command: "bg", Description: "Run a task in the background"},
	{Command: "jobs", Description: "Running, queued and scheduled work"},
}

const scheduleHelp = `Schedules:
/schedule — this chat's schedules with their next fire times
/schedule add <when> <goal> — e.g. /schedule add weekdays 8:00 summarise the open issues
/schedule add --quiet <when> <goal> — a check-in that speaks only when there is something to report
/schedule add --message <when> <text> — a reminder sent as it is (no model)
/schedule pause|resume|rm|run <id>
/remind <when> <text> — once: in 20m, at 18:00, tomorrow 9:00, at 2026-12-24 18:00
/tz [Europe/Berlin] — the chat's time zone
/bg <goal> — runs with its own conversation, answers as a reply
/jobs — running, queued and scheduled work; /stop <id> stops one
<when> is also: daily 9:00, mon 9:00, every 2h, or a cron expression such as 0 9 * * 1-5.`

// bgJobs are the background jobs (/bg) this bot enqueued and has not seen
// finish: their answer replies to the asking message. Bounded; a job
// forgotten (or lost with a restart) still answers, without the reply.
type bgJobs struct {
	mu sync.Mutex
	m  map[string]bgJob
}

type bgJob struct {
	chatID int64
	msgID  int
	goal   string
	at     time.Time
}

// maxBgJobs bounds the remembered background jobs of one bot.
const maxBgJobs = 1024

func (g *bgJobs) add(id string, j bgJob) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]bgJob{}
	}
	if len(g.m) >= maxBgJobs {
		oldest := ""
		for k, v := range g.m {
			if oldest == "" || v.at.Before(g.m[oldest].at) {
				oldest = k
			}
		}
		delete(g.m, oldest)
	}
	g.m[id] = j
}

// take forgets job id of chat and returns it.
func (g *bgJobs) take(id string, chatID int64) (bgJob, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	j, ok := g.m[id]
	if !ok || j.chatID != chatID {
		return bgJob{}, false
	}
	delete(g.m, id)
	return j, true
}

func (g *bgJobs) of(chatID int64) map[string]bgJob {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]bgJob{}
	for k, v := range g.m {
		if v.chatID == chatID {
			out[k] = v
		}
	}
	return out
}

// bgReplyTo is the message a finished background job answers (0: none);
// the delivery calls it for jobs the chat did not start in the foreground.
func (c *chat) bgReplyTo(jobID string) int {
	j, ok := c.b.bg.take(jobID, c.id)
	if !ok {
		return 0
	}
	return j.msgID
}

// scheduleCommand handles the commands of this file and reports whether
// cmd was one of them. It runs in the chat's actor.
func (c *chat) scheduleCommand(ctx context.Context, updateID int, userID int64, m *tgbotapi.Message) bool {
	arg := strings.TrimSpace(m.CommandArguments())
	switch strings.ToLower(m.Command()) {
	case "schedule", "schedules":
		c.scheduleCmd(ctx, userID, m, arg)
	case "remind":
		c.remindCmd(ctx, userID, m, arg)
	case "tz":
		c.tzCmd(ctx, userID, arg)
	case "bg":
		c.bgCmd(ctx, updateID, userID, m, arg)
	case "jobs":
		c.jobsCmd(ctx, userID)
	case "stop":
		if arg == "" {
			return false // the chat's /stop: everything
		}
		c.stopOne(ctx, arg)
	default:
		return false
	}
	return true
}

// schedules is the chat's schedule service, or nil after telling the
// chat that schedules are off.
func (c *chat) schedules(ctx context.Context) *schedule.Service {
	if c.b.cfg.Schedules == nil {
		c.reply(ctx, "Schedules are off on this bot (the operator did not enable them).")
		return nil
	}
	return c.b.cfg.Schedules
}

func (c *chat) owner(userID int64) schedule.Owner {
	return schedule.Owner{ChatID: c.id, UserID: userID}
}

// zone is the chat's time zone: its /tz, else UTC.
func (c *chat) zone(ctx context.Context, sv *schedule.Service) (string, *time.Location) {
	tz, err := sv.Zone(ctx, c.owner(0))
	if err != nil {
		c.b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: reading the chat's time zone failed; using UTC")
	}
	loc, err := schedule.LoadZone(tz)
	if err != nil {
		return "", time.UTC
	}
	return tz, loc
}

// scheduleErr is the chat's text for a schedule error: the error itself
// names the field or limit; unknown errors (the store down) are logged
// and told as such.
func (c *chat) scheduleErr(err error) string {
	switch {
	case errors.Is(err, schedule.ErrNotFound):
		return "No such schedule in this chat. /schedule lists them."
	case errors.Is(err, schedule.ErrForbidden):
		return "Only the member who made this schedule (or a group admin) can change it."
	case errors.Is(err, schedule.ErrLimit), errors.Is(err, schedule.ErrInvalid), errors.Is(err, schedule.ErrInvalidSpec):
		return "⚠️ " + strings.TrimPrefix(strings.TrimPrefix(err.Error(), "schedule: "), "invalid schedule: ")
	}
	c.b.log.WithError(err).WithField("chat_id", c.id).Error("bot: schedule store")
	return "The schedule store is not reachable right now; try again in a minute."
}

func (c *chat) scheduleCmd(ctx context.Context, userID int64, m *tgbotapi.Message, arg string) {
	sv := c.schedules(ctx)
	if sv == nil {
		return
	}
	sub, rest, _ := strings.Cut(arg, " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(sub) {
	case "", "list", "ls":
		c.sendScheduleList(ctx, sv, 0)
	case "help":
		c.reply(ctx, scheduleHelp)
	case "add", "new":
		c.addSchedule(ctx, sv, userID, rest, schedule.KindGoal, false)
	case "pause", "resume", "rm", "delete", "del", "run":
		if rest == "" || strings.ContainsAny(rest, " \n") {
			c.reply(ctx, fmt.Sprintf("Say which schedule: /schedule %s <id> (the ids are in /schedule).", strings.ToLower(sub)))
			return
		}
		c.reply(ctx, c.changeSchedule(ctx, sv, userID, strings.ToLower(sub), rest))
	default:
		c.reply(ctx, fmt.Sprintf("Unknown /schedule subcommand %q.\n\n%s", oneLine(sub, 30), scheduleHelp))
	}
}

// addSchedule parses "[--quiet] [--message] <when> <text>" and creates
// the schedule.
func (c *chat) addSchedule(ctx context.Context, sv *schedule.Service, userID int64, arg string, kind schedule.Kind, oneShot bool) {
	quiet := false
	for {
		switch {
		case strings.HasPrefix(arg, "--quiet"):
			quiet, arg = true, strings.TrimSpace(strings.TrimPrefix(arg, "--quiet"))
			continue
		case strings.HasPrefix(arg, "--message"):
			kind, arg = schedule.KindMessage, strings.TrimSpace(strings.TrimPrefix(arg, "--message"))
			continue
		}
		break
	}
	tz, loc := c.zone(ctx, sv)
	now := c.b.cfg.Now()
	spec, text, err := schedule.SplitSpec(arg, tz, now)
	if err != nil {
		c.reply(ctx, c.scheduleErr(err)+"\n\n"+scheduleHelp)
		return
	}
	if oneShot && !strings.HasPrefix(spec, "at ") {
		c.reply(ctx, "⚠️ /remind is for one reminder; for a repeating one use /schedule add --message <when> <text>.")
		return
	}
	if strings.TrimSpace(text) == "" {
		what := "goal"
		if kind == schedule.KindMessage {
			what = "text"
		}
		c.reply(ctx, fmt.Sprintf("⚠️ The schedule needs a %s after the time, e.g. /remind in 20m stretch.", what))
		return
	}
	s := schedule.Schedule{Kind: kind, Spec: spec, TZ: tz, Text: text, Quiet: quiet && kind == schedule.KindGoal,
		Model: c.jobModel(), Budget: c.b.jobBudget(), Lang: c.b.lang(userID)} // Lang: the runner's budget notice (schedule/budget.go)
	s, err = sv.Create(ctx, c.owner(userID), s)
	if err != nil {
		c.reply(ctx, c.scheduleErr(err))
		return
	}
	c.b.log.WithFields(logrus.Fields{"chat_id": c.id, "user_id": userID, "schedule": s.ID, "spec": s.Spec, "kind": s.Kind}).Info("bot: schedule created")
	what := "Scheduled"
	if kind == schedule.KindMessage {
		what = "Reminder set"
	}
	c.reply(ctx, fmt.Sprintf("✅ %s (%s): %s\nNext: %s. Pause or delete it with /schedule.", what, s.ID, describeSpec(s, loc), fmtWhen(s.Next, loc, now)))
}

func (c *chat) remindCmd(ctx context.Context, userID int64, m *tgbotapi.Message, arg string) {
	sv := c.schedules(ctx)
	if sv == nil {
		return
	}
	if arg == "" {
		c.reply(ctx, "Say when and what: /remind in 20m stretch, /remind at 18:00 call mum, /remind tomorrow 9:00 renew the domain.")
		return
	}
	c.addSchedule(ctx, sv, userID, arg, schedule.KindMessage, true)
}

func (c *chat) tzCmd(ctx context.Context, userID int64, arg string) {
	sv := c.schedules(ctx)
	if sv == nil {
		return
	}
	if arg == "" {
		tz, _ := c.zone(ctx, sv)
		if tz == "" {
			tz = "UTC"
		}
		c.reply(ctx, fmt.Sprintf("This chat's schedules use %s. Change it with /tz Europe/Berlin (an IANA zone name).", tz))
		return
	}
	name, err := sv.SetZone(ctx, c.owner(userID), arg)
	if err != nil {
		c.reply(ctx, c.scheduleErr(err))
		return
	}
	if name == "" {
		name = "UTC"
	}
	c.reply(ctx, fmt.Sprintf("✅ Time zone set to %s. New schedules read their times in it; /schedule shows times in it.", name))
}

// changeSchedule pauses, resumes, deletes or runs one schedule of the
// chat and returns the text for the chat. In a group, a member who did
// not make the schedule may change it only as an admin.
func (c *chat) changeSchedule(ctx context.Context, sv *schedule.Service, userID int64, op, id string) string {
	o := c.owner(userID)
	do := func(o schedule.Owner) (string, error) {
		switch op {
		case "pause":
			_, err := sv.Pause(ctx, o, id)
			return "⏸ Paused " + id + ".", err
		case "resume":
			s, err := sv.Resume(ctx, o, id)
			_, loc := c.zone(ctx, sv)
			return "▶️ Resumed " + id + "; next: " + fmtWhen(s.Next, loc, c.b.cfg.Now()) + ".", err
		case "run":
			jid, err := sv.RunNow(ctx, o, id)
			return "🚀 Running " + id + " now (job " + jid + ").", err
		default:
			return "🗑 Deleted " + id + ".", sv.Delete(ctx, o, id)
		}
	}
	text, err := do(o)
	if errors.Is(err, schedule.ErrForbidden) && c.id < 0 && c.b.isAdmin(ctx, c.id, userID) {
		o.Admin = true
		text, err = do(o)
	}
	if err != nil {
		return c.scheduleErr(err)
	}
	c.b.log.WithFields(logrus.Fields{"chat_id": c.id, "user_id": userID, "schedule": id, "op": op}).Info("bot: schedule changed")
	return text
}

// maxListed bounds the schedules one /schedule message shows.
const maxListed = 20

// scheduleList is the text and buttons of the chat's schedule list.
func (c *chat) scheduleList(ctx context.Context, sv *schedule.Service) (string, *tgbotapi.InlineKeyboardMarkup, error) {
	list, err := sv.List(ctx, c.owner(0))
	if err != nil {
		return "", nil, err
	}
	tz, loc := c.zone(ctx, sv)
	if tz == "" {
		tz = "UTC"
	}
	if len(list) == 0 {
		return "No schedules in this chat. Add one: /schedule add weekdays 8:00 summarise the open issues, or /remind in 20m stretch.", nil, nil
	}
	now := c.b.cfg.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "Schedules (times in %s):", tz)
	var rows [][]tgbotapi.InlineKeyboardButton
	for i, s := range list {
		if i == maxListed {
			fmt.Fprintf(&b, "\n… and %d more.", len(list)-maxListed)
			break
		}
		icon := "🔁"
		done := !s.Enabled && !s.Last.IsZero() && strings.HasPrefix(s.Spec, "at ")
		switch {
		case done:
			icon = "✔️"
		case !s.Enabled:
			icon = "⏸"
		case s.Kind == schedule.KindMessage:
			icon = "⏰"
		case s.Quiet:
			icon = "🤫"
		}
		next := "paused"
		if s.Enabled {
			next = "next " + fmtWhen(s.Next, loc, now)
		} else if done {
			next = "done"
		}
		fmt.Fprintf(&b, "\n\n%s %s — %s — %s\n%s", icon, s.ID, describeSpec(s, loc), next, oneLine(s.Text, 120))
		if !s.Last.IsZero() {
			fmt.Fprintf(&b, "\nlast: %s (%s)", fmtWhen(s.Last, loc, now), s.LastStatus)
		}
		toggle := tgbotapi.NewInlineKeyboardButtonData("⏸ "+s.ID[:min(6, len(s.ID))], scheduleData('p', s.ID))
		if !s.Enabled {
			toggle = tgbotapi.NewInlineKeyboardButtonData("▶️ "+s.ID[:min(6, len(s.ID))], scheduleData('r', s.ID))
		}
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(toggle,
			tgbotapi.NewInlineKeyboardButtonData("🚀 run", scheduleData('n', s.ID)),
			tgbotapi.NewInlineKeyboardButtonData("🗑 delete", scheduleData('d', s.ID))))
	}
	kb := tgbotapi.NewInlineKeyboardMarkup(rows...)
	return b.String(), &kb, nil
}

// sendScheduleList posts the list, or edits message msgID to it.
func (c *chat) sendScheduleList(ctx context.Context, sv *schedule.Service, msgID int) {
	text, kb, err := c.scheduleList(ctx, sv)
	if err != nil {
		c.reply(ctx, c.scheduleErr(err))
		return
	}
	var markup any
	if kb != nil {
		markup = *kb
	}
	if msgID != 0 {
		var ikb *tgbotapi.InlineKeyboardMarkup
		if kb != nil {
			ikb = kb
		}
		if kind, err := c.b.tg.EditPlain(ctx, c.id, msgID, text, ikb); kind != tgOK && kind != tgMessageGone {
			c.checkSend(ctx, kind, err)
		}
		return
	}
	_, kind, err := c.b.tg.SendPlain(ctx, c.id, text, markup)
	c.checkSend(ctx, kind, err)
}

// scheduleData is the callback data of a list button: "sc:<op>:<id>".
func scheduleData(op byte, id string) string { return "sc:" + string(op) + ":" + id }

// parseScheduleData is the inverse of scheduleData. Pure; the data is
// untrusted (the id is checked again by the service, for this chat).
func parseScheduleData(s string) (op string, id string, ok bool) {
	rest, ok := strings.CutPrefix(s, "sc:")
	if !ok || len(rest) < 3 || rest[1] != ':' {
		return "", "", false
	}
	id = rest[2:]
	if id == "" || len(id) > 32 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return "", "", false
	}
	switch rest[0] {
	case 'p':
		return "pause", id, true
	case 'r':
		return "resume", id, true
	case 'd':
		return "rm", id, true
	case 'n':
		return "run", id, true
	}
	return "", "", false
}

// pressSchedule handles a list button and reports whether cq was one. In
// groups with admin-only /schedule the press is checked like the command.
func (c *chat) pressSchedule(ctx context.Context, cq *tgbotapi.CallbackQuery, lang string) bool {
	op, id, ok := parseScheduleData(cq.Data)
	if !ok {
		return false
	}
	b := c.b
	sv := b.cfg.Schedules
	if sv == nil {
		b.answerCallback(ctx, cq.ID, "Schedules are off.", false)
		return true
	}
	if c.id < 0 && slices.Contains(b.cfg.AdminCommands, "schedule") && !b.isAdmin(ctx, c.id, cq.From.ID) {
		b.answerCallback(ctx, cq.ID, tr(lang, "admins.only", "schedule"), true)
		return true
	}
	text := c.changeSchedule(ctx, sv, cq.From.ID, op, id)
	b.answerCallback(ctx, cq.ID, oneLine(text, 190), false)
	c.sendScheduleList(ctx, sv, cq.Message.MessageID)
	return true
}

// describeSpec says when s fires, in loc.
func describeSpec(s schedule.Schedule, loc *time.Location) string {
	switch {
	case strings.HasPrefix(s.Spec, "at "):
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(s.Spec, "at ")); err == nil {
			return "once at " + t.In(loc).Format("Mon 2 Jan 15:04")
		}
	case strings.HasPrefix(s.Spec, "cron "):
		tz := s.TZ
		if tz == "" {
			tz = "UTC"
		}
		return s.Spec + " (" + tz + ")"
	}
	return s.Spec
}

// fmtWhen shows t in loc, with the day when it is not today.
func fmtWhen(t time.Time, loc *time.Location, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	lt, ln := t.In(loc), now.In(loc)
	switch {
	case lt.Year() == ln.Year() && lt.YearDay() == ln.YearDay():
		return "today " + lt.Format("15:04")
	case lt.Sub(ln) > 0 && lt.Sub(ln) < 48*time.Hour && lt.YearDay() == ln.AddDate(0, 0, 1).YearDay():
		return "tomorrow " + lt.Format("15:04")
	}
	return lt.Format("Mon 2 Jan 15:04")
}

// bgCmd queues /bg's goal as a job with a session and a queue lane of its
// own: it runs beside the chat's foreground work, does not continue the
// chat's conversation, and its answer replies to the asking message. The chat's rate limit and daily budget apply as to a typed
// message.
func (c *chat) bgCmd(ctx context.Context, updateID int, userID int64, m *tgbotapi.Message, arg string) {
	b := c.b
	lang := b.lang(userID)
	if arg == "" {
		c.replyTo(ctx, m.MessageID, "Say what to do: /bg summarise the open issues. It runs with its own conversation and answers here as a reply.")
		return
	}
	now := b.cfg.Now()
	if ok, wait := b.users.allows(userID, now); !ok {
		c.replyTo(ctx, m.MessageID, tr(lang, "slow.down", b.cfg.UserJobsPerMinute, chatcore.HumanWait(wait)))
		return
	}
	adm := c.budgetGate(lang)
	if adm.Refusal != "" {
		c.replyTo(ctx, m.MessageID, adm.Refusal)
		return
	}
	if ok, wait := b.users.take(userID, now); !ok {
		c.replyTo(ctx, m.MessageID, tr(lang, "slow.down", b.cfg.UserJobsPerMinute, chatcore.HumanWait(wait)))
		return
	}
	// A lane of its own: the queue runs it beside the chat's (or topic's)
	// foreground work, not behind it (queue.Job.Lane).
	job := queue.Job{ChatID: c.id, UserID: userID, Goal: arg, Budget: b.jobBudget(), Model: c.jobModel(),
		SessionID:      fmt.Sprintf("telegram:%d:bg:%d", c.id, updateID),
		IdempotencyKey: fmt.Sprintf("telegram:%d:%d", b.tg.Self().ID, updateID),
		Lane:           fmt.Sprintf("bg:%d", updateID)}
	adm, out, refusal := c.reserveJob(ctx, userID, adm, lang) // budgets.go
	switch out {
	case reserveHeld:
		c.replyTo(ctx, m.MessageID, tr(lang, "bud.wait"))
		return
	case reserveRefused, reserveFailed:
		c.replyTo(ctx, m.MessageID, refusal)
		return
	}
	job.ID = adm.JobID
	if adm.USD > 0 {
		job.Budget.MaxCostUSD = adm.USD
	}
	job.Budget.MaxTotalTokens = adm.Cap
	job.Budget.CappedBy = adm.CappedBy()
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	stored, dup, err := b.q.Enqueue(ectx, job)
	cancel()
	if err != nil || dup && stored.ID != adm.JobID {
		c.releaseBudget(ctx, adm.JobID)
	}
	if err != nil {
		b.log.WithError(err).WithField("chat_id", c.id).Error("bot: enqueue of a background job failed")
		c.replyTo(ctx, m.MessageID, tr(lang, "enqueue.fail"))
		return
	}
	if dup {
		return // the update again (redelivered): answered the first time
	}
	b.bg.add(stored.ID, bgJob{chatID: c.id, msgID: m.MessageID, goal: arg, at: now})
	b.topics.set(stored.ID, c.topic) // its answer goes to the asking topic's actor
	b.log.WithFields(logrus.Fields{"chat_id": c.id, "user_id": userID, "job_id": stored.ID}).Info("bot: background job enqueued")
	c.replyTo(ctx, m.MessageID, fmt.Sprintf("🧵 Background job %s queued; its answer will reply to this message. /jobs lists it, /stop %s stops it.", stored.ID, stored.ID))
}

// jobsCmd lists the chat's running and queued work, its background jobs
// and its enabled schedules.
func (c *chat) jobsCmd(ctx context.Context, userID int64) {
	c.roll()
	now := c.b.cfg.Now()
	var lines []string
	for i, id := range c.queue {
		state := "queued"
		if i == 0 {
			state = "running"
		}
		goal := ""
		if js := c.jobs[id]; js != nil && !js.startedAt.IsZero() {
			goal = " since " + chatcore.HumanWait(now.Sub(js.startedAt))
		}
		lines = append(lines, fmt.Sprintf("• %s %s%s", state, id, goal))
	}
	if len(c.held) > 0 {
		lines = append(lines, fmt.Sprintf("• %d message(s) waiting for the daily budget", len(c.held)))
	}
	bg := c.b.bg.of(c.id)
	ids := make([]string, 0, len(bg))
	for id := range bg {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		lines = append(lines, fmt.Sprintf("• background %s — %s", id, oneLine(bg[id].goal, 60)))
	}
	if sv := c.b.cfg.Schedules; sv != nil {
		list, err := sv.List(ctx, c.owner(0))
		if err == nil {
			_, loc := c.zone(ctx, sv)
			for _, s := range list {
				if s.Enabled {
					lines = append(lines, fmt.Sprintf("• scheduled %s — %s — %s", s.ID, fmtWhen(s.Next, loc, now), oneLine(s.Text, 60)))
				}
			}
		}
	}
	if len(lines) == 0 {
		c.reply(ctx, "Nothing running, queued or scheduled in this chat.")
		return
	}
	c.reply(ctx, "Work in this chat:\n"+strings.Join(lines, "\n")+"\n\n/stop <id> stops a job; /schedule pause <id> pauses a schedule.")
}

// stopOne cancels one job of this chat by id: a foreground or background
// job the bot started here, or (when the queue can tell) another job of
// this chat, such as a schedule's fire. A job of another chat is never
// touched: to this chat it does not exist.
func (c *chat) stopOne(ctx context.Context, id string) {
	b := c.b
	if len(id) > queue.MaxIDLen || strings.ContainsAny(id, " \n") {
		c.reply(ctx, "That is not a job id; /jobs lists them.")
		return
	}
	mine := slices.Contains(c.queue, id)
	if !mine {
		_, mine = b.bg.of(c.id)[id]
	}
	if !mine {
		if in, ok := b.q.(queue.Inspector); ok {
			info, found, err := in.Inspect(ctx, id)
			mine = err == nil && found && info.Job.ChatID == c.id
		}
	}
	if !mine {
		c.reply(ctx, "No such job in this chat; /jobs lists them.")
		return
	}
	if js := c.jobs[id]; js != nil {
		js.stopped = true
	}
	err := b.q.Cancel(ctx, id)
	switch {
	case err == nil:
		c.reply(ctx, "⏹ Stopping "+id+".")
	case errors.Is(err, queue.ErrNotFound):
		c.reply(ctx, "Job "+id+" has already finished.")
	default:
		b.log.WithError(err).WithField("job_id", id).Warn("bot: cancel failed")
		c.reply(ctx, "Could not stop "+id+" right now; try again.")
	}
}
