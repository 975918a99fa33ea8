package bot

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/queue"
)

// Per-user budgets (issue 26 point 5). The spend and the reservations are
// kept where the queue is (queue.Budgets: Redis in distributed mode, the
// embedded store's bbolt file, memory in tests), so several bots and the
// workers that fire schedules share them; the bot only asks and tells.
//
// Each job is charged to the chat's account (with the chat's daily budget
// as its cap, so a worker firing a schedule sees the chat's spend too) and
// to the user's account (the operator's caps with the user's override), or,
// for a guest, to the shared guest pool. Before the job is enqueued the
// bot reserves its share under the job's id (ReserveBudget): refused
// (spent) → the user is told which cap and when it resets; held (the rest
// is reserved by running jobs, possibly in another chat or on another
// bot) → the message waits as a held request and is tried again at each
// progress tick; granted → the job carries the share as its caps (total
// tokens and cost), so it cannot overrun. The result settles it with the
// actual usage (SettleBudget, once per job id, whichever bot delivers);
// a job that is never enqueued or is forgotten releases it; a bot that
// dies leaks nothing, as the reservation ends at its lease.
type budgetState struct {
	store  queue.Budgets // nil: the queue keeps no budgets
	policy queue.BudgetPolicy
	key    []byte // HMAC key of the user-id hashes in metrics

	tokens, cost, refused *prometheus.CounterVec
}

// initBudgets sets the budget store up (New).
func (b *Bot) initBudgets(q Queue) {
	bs := &b.budget
	bs.store, _ = q.(queue.Budgets)
	users := map[int64]queue.Caps{}
	for id, c := range b.cfg.UserBudgets {
		users[id] = c
	}
	var guest *queue.Caps
	if b.cfg.GuestBudget != nil {
		g := queue.Caps{}.Over(*b.cfg.GuestBudget) // a negative field is no cap
		guest = &g
	}
	bs.policy = queue.BudgetPolicy{ChatDayTokens: b.cfg.DailyTokenBudget, User: queue.Caps{}.Over(b.cfg.UserBudget), Users: users, Guest: guest,
		AllowedUsers: b.cfg.AllowedUsers, AllowedChats: b.cfg.AllowedChats, AllowAll: b.cfg.AllowAll, JobMaxTokens: int64(b.cfg.JobBudget.MaxTotalTokens),
		JobMaxUSD: b.cfg.JobBudget.MaxCostUSD}
	k := sha256.Sum256([]byte("odek-bot user hash\x00" + b.cfg.Token))
	bs.key = k[:]
	bs.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_bot_user_tokens_total",
		Help: "Tokens (prompt + completion) of settled jobs, by user (a keyed hash of the Telegram user id; guest = the guest pool)."}, []string{"user"})
	bs.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_bot_user_cost_usd_total",
		Help: "Estimated USD of settled jobs (the workers' price table), by user hash."}, []string{"user"})
	bs.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "odek_bot_budget_refusals_total",
		Help: "Requests and fires refused because a budget was spent, by user hash and limit (day_tokens, month_tokens, day_usd, month_usd)."}, []string{"user", "limit"})
	b.Registry().MustRegister(bs.tokens, bs.cost, bs.refused)
}

// publishBudgetPolicy stores the operator's caps in the budget store for
// the workers that fire schedules (Run, at start). A failure is logged:
// fires then use the last policy stored, or none.
func (b *Bot) publishBudgetPolicy(ctx context.Context) {
	if b.budget.store == nil {
		if b.cfg.GuestBudget != nil || !b.cfg.UserBudget.IsZero() || len(b.cfg.UserBudgets) > 0 {
			b.log.Error("bot: per-user budgets are set but the queue keeps no budgets; they are not enforced and guests are refused")
		}
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.budget.store.PutBudgetPolicy(pctx, b.budget.policy); err != nil {
		b.log.WithError(err).Warn("bot: storing the budget policy for the workers failed; scheduled fires use the last one stored")
	}
}

// guestAllowed reports whether a sender the allowlist refuses may still
// use the bot as a guest: the guest pool is on (opt-in), the chat is a
// group, and the budgets are kept (else fail closed).
func (b *Bot) guestAllowed(userID, chatID int64) bool {
	return b.budget.policy.Guest != nil && b.budget.store != nil && chatID < 0 && userID != 0
}

// userLabel is a user's label in metrics: a keyed hash of the id, never
// the id itself ("guest" for the guest pool).
func (b *Bot) userLabel(account string) string {
	if account == queue.GuestAccount {
		return "guest"
	}
	m := hmac.New(sha256.New, b.budget.key)
	m.Write([]byte(account))
	return hex.EncodeToString(m.Sum(nil)[:6])
}

// budgetLease is how long a job's reservation holds without a result:
// twice the job's time limit and five minutes for the wait in the queue.
func (b *Bot) budgetLease() time.Duration { return 2*b.cfg.AgentTimeout + 5*time.Minute }

// newJobID names a job before it is enqueued, so its reservation and
// the job share the id: 16 hex digits of the clock, then 16 random (in
// time order, as the embedded store prefers).
func newJobID(now time.Time) string {
	var x [16]byte
	binary.BigEndian.PutUint64(x[:8], uint64(now.UnixNano()))
	if _, err := rand.Read(x[8:]); err != nil {
		panic("bot: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(x[:])
}

// reservation outcomes.
type reserveOutcome int

const (
	reserveOK reserveOutcome = iota
	reserveHeld
	reserveRefused
	reserveFailed
)

// reserveJob asks the budget store for a job's share, given what the
// chat's books admitted (adm): on reserveOK it returns adm with the job's
// id and caps; on reserveRefused the text for the user. It runs in the
// chat's actor.
func (c *chat) reserveJob(ctx context.Context, userID int64, adm chatcore.Admission, lang string) (chatcore.Admission, reserveOutcome, string) {
	b := c.b
	if b.budget.store == nil {
		return adm, reserveOK, ""
	}
	now := b.cfg.Now()
	id := newJobID(now)
	r := queue.Reservation{ID: id, Accounts: b.budget.policy.Charged(c.id, userID), MaxTokens: int64(adm.Cap), MaxUSD: b.cfg.JobBudget.MaxCostUSD,
		Lease: b.budgetLease(), Now: now}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	g, err := b.budget.store.ReserveBudget(rctx, r)
	cancel()
	log := b.log.WithFields(logrus.Fields{"chat_id": c.id, "user_id": userID})
	if err != nil {
		log.WithError(err).Error("bot: reserving the job's budget failed; the request is not run")
		return adm, reserveFailed, tr(lang, "enqueue.fail")
	}
	switch g.Verdict {
	case queue.GrantSpent:
		b.budget.refused.WithLabelValues(b.userLabel(g.Account), g.Limit).Inc()
		log.WithFields(logrus.Fields{"account_hash": b.userLabel(g.Account), "limit": g.Limit}).Info("bot: request refused: budget spent")
		return adm, reserveRefused, chatcore.BudgetRefusal(lang, g, now)
	case queue.GrantHeld:
		return adm, reserveHeld, ""
	}
	adm.JobID, adm.USD = id, g.USD
	if g.Tokens > 0 && (adm.Cap == 0 || g.Tokens < int64(adm.Cap)) {
		adm.Cap = int(g.Tokens)
		adm.UserCapped = true
	}
	if g.USD > 0 {
		adm.UserCapped = adm.UserCapped || b.cfg.JobBudget.MaxCostUSD <= 0 || g.USD < b.cfg.JobBudget.MaxCostUSD
	}
	return adm, reserveOK, ""
}

// releaseBudget drops a reservation whose job will not run.
func (c *chat) releaseBudget(ctx context.Context, id string) {
	b := c.b
	if b.budget.store == nil || id == "" {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.budget.store.ReleaseBudget(rctx, id); err != nil {
		b.log.WithError(err).WithField("job_id", id).Warn("bot: releasing a job's budget failed; it ends with its lease")
	}
}

// settleBudget counts a delivered result against the accounts its job
// was charged to (js is nil for a job this bot did not start: a fire, or
// another bot's job; the store knows its accounts from the reservation).
func (c *chat) settleBudget(ctx context.Context, res queue.Result, js *jobState) {
	b := c.b
	if b.budget.store == nil || res.JobID == "" {
		return
	}
	var fallback []string
	if js != nil {
		fallback = queue.Names(b.budget.policy.Charged(c.id, js.userID))
	} else {
		fallback = []string{queue.ChatAccount(c.id)}
	}
	s := queue.Spend{Tokens: max(res.Usage.PromptTokens+res.Usage.CompletionTokens, 0), Prompt: max(res.Usage.PromptTokens, 0),
		Cached: max(res.Usage.CachedTokens, 0), USD: max(res.Usage.CostUSD, 0), Jobs: 1}
	if res.NoModel {
		s.Jobs = 0 // a reminder: nothing was spent
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	counted, err := b.budget.store.SettleBudget(sctx, res.JobID, fallback, s, b.cfg.Now())
	if err != nil {
		b.log.WithError(err).WithField("job_id", res.JobID).Error("bot: settling the job's budget failed; its reservation ends with its lease and its spend is not counted")
		return
	}
	if counted && js != nil && js.userID != 0 {
		acct := queue.UserAccount(js.userID)
		if b.budget.policy.IsGuest(c.id, js.userID) {
			acct = queue.GuestAccount
		}
		b.budget.tokens.WithLabelValues(b.userLabel(acct)).Add(float64(s.Tokens))
		b.budget.cost.WithLabelValues(b.userLabel(acct)).Add(s.USD)
	}
}

// userBudgetSpent is the refusal for a file or voice message whose
// sender's budget (or the guest pool) is already spent, so nothing is
// downloaded or transcribed for a request that would be refused; "" when
// it is not (or cannot be read: the reservation decides later).
func (c *chat) userBudgetSpent(ctx context.Context, userID int64, lang string) string {
	b := c.b
	if b.budget.store == nil || userID == 0 {
		return ""
	}
	p := b.budget.policy
	acct, caps := queue.UserAccount(userID), p.UserCaps(userID)
	if p.IsGuest(c.id, userID) {
		acct, caps = queue.GuestAccount, *p.Guest
	}
	if caps.IsZero() {
		return ""
	}
	now := b.cfg.Now()
	uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, err := b.budget.store.BudgetUsage(uctx, acct, now)
	if err != nil {
		return ""
	}
	day, month := u.Today(now), u.Month(now)
	for _, x := range []struct {
		limit     string
		used, max float64
	}{
		{queue.LimitDayTokens, float64(day.Tokens), float64(caps.DayTokens)}, {queue.LimitMonthTokens, float64(month.Tokens), float64(caps.MonthTokens)},
		{queue.LimitDayUSD, day.USD, caps.DayUSD}, {queue.LimitMonthUSD, month.USD, caps.MonthUSD},
	} {
		if x.max > 0 && x.used >= x.max {
			return chatcore.BudgetRefusal(lang, queue.Grant{Verdict: queue.GrantSpent, Account: acct, Limit: x.limit, Used: x.used, Max: x.max, ResetAt: queue.ResetAt(x.limit, now)}, now)
		}
	}
	return ""
}

// guestCommands are what a guest may use: asking (jobs, /bg, /retry, the
// operator's skills) and looking (/help, /status, /usage, /artifact), not
// what changes the group's conversation or settings for its members
// (/new, /stop, /model, /busy, /schedule, …).
var guestCommands = []string{"start", "help", "status", "usage", "retry", "bg", "artifact"}

// guestCommandRefused answers a guest's command that guests may not use
// and reports whether it did. It runs in the chat's actor.
func (c *chat) guestCommandRefused(ctx context.Context, userID int64, m *tgbotapi.Message) bool {
	b := c.b
	if !b.budget.policy.IsGuest(c.id, userID) {
		return false
	}
	cmd := strings.ToLower(m.Command())
	if slices.Contains(guestCommands, cmd) {
		return false
	}
	for _, sc := range b.cfg.Skills {
		if sc.Command == cmd {
			return false
		}
	}
	c.replyTo(ctx, m.MessageID, tr(b.lang(userID), "bud.guest.cmd", cmd))
	return true
}

// spendOutside counts tokens spent outside a job (the digest call of
// /compact in embedded mode) against the chat's and the user's accounts.
func (c *chat) spendOutside(ctx context.Context, userID int64, tokens int64) {
	b := c.b
	if b.budget.store == nil || tokens <= 0 {
		return
	}
	now := b.cfg.Now()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := b.budget.store.SettleBudget(sctx, "side-"+newJobID(now), queue.Names(b.budget.policy.Charged(c.id, userID)), queue.Spend{Tokens: tokens}, now); err != nil {
		b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: counting a side call's tokens in the budget store failed")
	}
}

// usageCommand is /usage: the chat's day (its books) and, from the budget
// store, the asking user's own spend; /usage all lists every account for
// the bot's admins, in a private chat only (one chat never sees
// another's figures).
func (c *chat) usageCommand(ctx context.Context, userID int64, arg string) {
	b := c.b
	lang := b.lang(userID)
	now := b.cfg.Now()
	if strings.EqualFold(strings.TrimSpace(arg), "all") {
		c.reply(ctx, c.usageAll(ctx, userID, lang, now))
		return
	}
	c.roll()
	text := chatcore.UsageText(lang, c.books.Use, c.books.Hist, b.cfg.DailyTokenBudget, now)
	if b.budget.store != nil && userID != 0 {
		p := b.budget.policy
		acct, caps, guest := queue.UserAccount(userID), p.UserCaps(userID), false
		if p.IsGuest(c.id, userID) {
			acct, caps, guest = queue.GuestAccount, *p.Guest, true
		}
		uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		u, err := b.budget.store.BudgetUsage(uctx, acct, now)
		cancel()
		if err != nil {
			b.log.WithError(err).Warn("bot: reading the user's budget usage failed")
		} else {
			text += "\n\n" + chatcore.UserUsageText(lang, u, caps, guest, now)
		}
	}
	c.reply(ctx, text)
}

// maxUsageAll bounds the accounts /usage all lists.
const maxUsageAll = 30

func (c *chat) usageAll(ctx context.Context, userID int64, lang string, now time.Time) string {
	b := c.b
	if c.id < 0 || !slices.Contains(b.cfg.Admins, userID) {
		return tr(lang, "bud.admins")
	}
	if b.budget.store == nil {
		return tr(lang, "bud.nostore")
	}
	uctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	accts, err := b.budget.store.BudgetAccounts(uctx, maxUsageAll)
	if err != nil {
		b.log.WithError(err).Warn("bot: listing budget accounts failed")
		return tr(lang, "enqueue.fail")
	}
	if len(accts) == 0 {
		return tr(lang, "bud.all.none")
	}
	lines := []string{tr(lang, "bud.all")}
	for _, a := range accts {
		u, err := b.budget.store.BudgetUsage(uctx, a, now)
		if err != nil {
			continue
		}
		label := a
		if strings.HasPrefix(a, "user:") {
			label = fmt.Sprintf("%s (#%s)", a, b.userLabel(a)) // the hash the metrics show
		}
		lines = append(lines, chatcore.AllUsageLine(lang, label, u, now))
	}
	return strings.Join(lines, "\n")
}

// ParseCaps reads caps from "day_tokens=200000,month_usd=20" (any of
// day_tokens, month_tokens, day_usd, month_usd; a value of "none" or -1
// removes a default in an override). Errors name the item.
func ParseCaps(s string) (queue.Caps, error) {
	var c queue.Caps
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return c, fmt.Errorf("%w: budget item %q: want name=value, e.g. day_tokens=200000", ErrConfig, clipStr(item, 40))
		}
		k, v = strings.TrimSpace(strings.ToLower(k)), strings.TrimSpace(v)
		if strings.EqualFold(v, "none") {
			v = "-1"
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f != f || f > 1e15 || f < -1 || (f < 0 && f != -1) {
			return c, fmt.Errorf("%w: budget item %q: the value must be a number >= 0 (or none)", ErrConfig, clipStr(item, 40))
		}
		switch k {
		case queue.LimitDayTokens:
			c.DayTokens = int64(f)
		case queue.LimitMonthTokens:
			c.MonthTokens = int64(f)
		case queue.LimitDayUSD:
			c.DayUSD = f
		case queue.LimitMonthUSD:
			c.MonthUSD = f
		default:
			return c, fmt.Errorf("%w: budget item %q: unknown cap %q (want day_tokens, month_tokens, day_usd or month_usd)", ErrConfig, clipStr(item, 40), clipStr(k, 20))
		}
	}
	return c, nil
}

// ParseUserCaps reads per-user overrides: "123:day_tokens=1000000;456:day_usd=5,month_usd=50".
func ParseUserCaps(s string) (map[int64]queue.Caps, error) {
	out := map[int64]queue.Caps{}
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		idText, caps, ok := strings.Cut(entry, ":")
		id, err := strconv.ParseInt(strings.TrimSpace(idText), 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%w: budget override %q: want <user id>:<caps>, e.g. 123:day_tokens=1000000", ErrConfig, clipStr(entry, 40))
		}
		c, err := ParseCaps(caps)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
}
