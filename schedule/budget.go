package schedule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/odekrun/odek/queue"
)

// Budgets before a fire (issue 27): a goal fire is a job like a typed
// message, so its owner's budgets apply before it runs, not only after.
// They are kept in the queue store (queue.Budgets), which every runner
// reaches, with the operator's caps the front end published there
// (queue.BudgetPolicy). Before claiming a goal fire the runner reserves
// the fire's share under the fire's job id, so runners racing for one
// fire share one reservation:
//
//   - spent (a cap of the chat or of the owner is reached): the fire is
//     claimed without a job, recorded with StatusBudget and the reason in
//     LastError, and the chat is told once (a reminder-style notice job,
//     sent only when the schedule's previous status was not already
//     StatusBudget);
//   - held (what is left is reserved by running jobs): the fire is left
//     due and tried again at the next tick, so it runs when they end, or
//     is missed after the grace like any late fire;
//   - granted: the job carries its share as its own caps (total tokens,
//     cost), so it cannot overrun; the front end settles it with the
//     result, and the reservation's lease ends it if no result comes.
//
// Without a budget store or without a stored policy, fires run unchecked
// as before.

// DefaultBudgetLease is how long a fire's reservation holds when the
// Runner's BudgetLease is 0.
const DefaultBudgetLease = time.Hour

// policyTTL is how long a runner uses the stored policy before reading it
// again.
const policyTTL = 10 * time.Second

type policyCache struct {
	mu  sync.Mutex
	at  time.Time
	p   queue.BudgetPolicy
	ok  bool
	err error
}

// budgets returns the queue's budget store and the stored policy; ok is
// false when there is no store or no policy (fires run unchecked).
func (r *Runner) budgets(ctx context.Context, now time.Time) (queue.Budgets, queue.BudgetPolicy, bool, error) {
	b, isB := r.Queue.(queue.Budgets)
	if !isB {
		return nil, queue.BudgetPolicy{}, false, nil
	}
	r.pc.mu.Lock()
	defer r.pc.mu.Unlock()
	if r.pc.at.IsZero() || now.Sub(r.pc.at) >= policyTTL || now.Before(r.pc.at) {
		r.pc.p, r.pc.ok, r.pc.err = b.BudgetPolicy(ctx)
		r.pc.at = now
	}
	return b, r.pc.p, r.pc.ok, r.pc.err
}

// budgetVerdict is what the budgets say about one goal fire.
type budgetVerdict struct {
	wait   bool   // held, or the store failed: leave the fire due
	refuse string // spent: the reason, recorded and told
	grant  queue.Grant
	err    error
}

// reserveFires reserves the fires of ss at ats (goal fires; reminders
// make no model call and are not checked), in one batch when the store
// has BudgetBatch (one round trip on Redis).
func (r *Runner) reserveFires(ctx context.Context, ss []Schedule, ats []time.Time, now time.Time) []budgetVerdict {
	out := make([]budgetVerdict, len(ss))
	if len(ss) == 0 {
		return out
	}
	b, p, ok, err := r.budgets(ctx, now)
	if err != nil {
		for i := range out {
			out[i] = budgetVerdict{wait: true, err: err}
		}
		return out
	}
	if !ok {
		return out
	}
	lease := r.BudgetLease
	if lease <= 0 {
		lease = DefaultBudgetLease
	}
	var rs []queue.Reservation
	var idx []int
	for i, s := range ss {
		if s.Kind != KindGoal {
			continue
		}
		res := queue.Reservation{ID: JobID(s, ats[i]), Accounts: p.Charged(s.ChatID, s.UserID), MaxTokens: p.JobMaxTokens, MaxUSD: p.JobMaxUSD, Lease: lease, Now: now}
		if s.Budget != nil {
			res.MaxTokens = minPos(res.MaxTokens, int64(s.Budget.MaxTotalTokens))
			if u := s.Budget.MaxCostUSD; u > 0 && (res.MaxUSD <= 0 || u < res.MaxUSD) {
				res.MaxUSD = u
			}
		}
		rs, idx = append(rs, res), append(idx, i)
	}
	var gs []queue.Grant
	var errs []error
	if bb, ok := b.(queue.BudgetBatch); ok {
		gs, errs = bb.ReserveBudgetAll(ctx, rs)
	} else {
		gs, errs = make([]queue.Grant, len(rs)), make([]error, len(rs))
		for i, res := range rs {
			gs[i], errs[i] = b.ReserveBudget(ctx, res)
		}
	}
	for j, i := range idx {
		out[i] = verdictOf(gs[j], errs[j], now)
	}
	return out
}

func verdictOf(g queue.Grant, err error, now time.Time) budgetVerdict {
	switch {
	case errors.Is(err, queue.ErrBudgetSettled):
		return budgetVerdict{wait: true} // this fire ran and was settled: a stale due read
	case err != nil:
		return budgetVerdict{wait: true, err: err}
	case g.Verdict == queue.GrantHeld:
		return budgetVerdict{wait: true, grant: g}
	case g.Verdict == queue.GrantSpent:
		return budgetVerdict{refuse: BudgetReason(g, now), grant: g}
	}
	return budgetVerdict{grant: g}
}

func minPos(a, b int64) int64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// capJob gives a granted fire's job its share as caps (a copy of the
// schedule's budget: BuildJob's job shares it).
func capJob(j *queue.Job, g queue.Grant) {
	var bud queue.Budget
	if j.Budget != nil {
		bud = *j.Budget
	}
	if g.Tokens > 0 {
		bud.MaxTotalTokens = int(minPos(int64(bud.MaxTotalTokens), g.Tokens))
	}
	if g.USD > 0 && (bud.MaxCostUSD <= 0 || g.USD < bud.MaxCostUSD) {
		bud.MaxCostUSD = g.USD
	}
	if bud != (queue.Budget{}) {
		j.Budget = &bud
	}
}

// BudgetReason is a refusal in words, for LastError and logs: which
// account's which cap, and when it resets. Pure.
func BudgetReason(g queue.Grant, now time.Time) string {
	return fmt.Sprintf("budget: %s %s spent (%s of %s); resets %s", g.Account, g.Limit, amount(g.Limit, g.Used), amount(g.Limit, g.Max),
		g.ResetAt.UTC().Format("2006-01-02 15:04 UTC"))
}

func amount(limit string, v float64) string {
	if limit == queue.LimitDayUSD || limit == queue.LimitMonthUSD {
		return fmt.Sprintf("$%.2f", v)
	}
	return strconv.FormatInt(int64(v), 10) + " tokens"
}

// budgetNotice is the chat's one message about a fire its budget refused,
// in the schedule owner's language.
func budgetNotice(s Schedule, g queue.Grant, now time.Time) string {
	whose := map[bool][3]string{
		false: {"this chat's", "your", "the guests' shared"},
		true:  {"das Budget dieses Chats", "dein Budget", "das gemeinsame Budget der Gäste"},
	}[s.Lang == "de"]
	who := whose[0]
	switch {
	case g.Account == queue.GuestAccount:
		who = whose[2]
	case len(g.Account) > 5 && g.Account[:5] == "user:":
		who = whose[1]
	}
	period := map[bool]string{false: "daily", true: "täglich"}[s.Lang == "de"]
	if g.Limit == queue.LimitMonthTokens || g.Limit == queue.LimitMonthUSD {
		period = map[bool]string{false: "monthly", true: "monatlich"}[s.Lang == "de"]
	}
	reset := g.ResetAt.UTC().Format("2006-01-02 15:04 UTC")
	if s.Lang == "de" {
		return fmt.Sprintf("Der geplante Auftrag %s lief nicht: %s (%s, %s) ist verbraucht. Es wird am %s zurückgesetzt; bis dahin werden weitere Ausführungen still übersprungen.",
			s.ID, who, period, amountIn("de", g.Limit, g.Max), reset)
	}
	return fmt.Sprintf("Scheduled job %s did not run: %s %s budget of %s is used up. It resets at %s; until then further fires are skipped without another message.",
		s.ID, who, period, amountIn("en", g.Limit, g.Max), reset)
}

func amountIn(lang, limit string, v float64) string {
	if limit == queue.LimitDayUSD || limit == queue.LimitMonthUSD {
		return fmt.Sprintf("$%.2f", v)
	}
	if lang == "de" {
		return strconv.FormatInt(int64(v), 10) + " Tokens"
	}
	return strconv.FormatInt(int64(v), 10) + " tokens"
}

// noticeJob is the reminder-style job that tells the chat of a refused
// fire: a message fire (no model call) with an id and key of its own.
func noticeJob(s Schedule, at time.Time, text string) queue.Job {
	at = at.UTC().Truncate(time.Millisecond)
	return queue.Job{ID: JobID(s, at) + "-budget", ChatID: s.ChatID, UserID: s.UserID, Goal: text, CreatedAt: at,
		IdempotencyKey: "sched:" + s.ID + ":" + strconv.FormatInt(at.UnixMilli(), 10) + ":m"}
}

// tellBudget enqueues the notice of a refused fire (once: the caller
// checked the schedule's previous status).
func (r *Runner) tellBudget(ctx context.Context, s Schedule, at time.Time, g queue.Grant, now time.Time) {
	_, _, err := r.Queue.Enqueue(ctx, noticeJob(s, at, budgetNotice(s, g, now)))
	if err != nil {
		r.Log.WithError(err).WithField("schedule", s.ID).Warn("schedule: telling the chat of a fire its budget refused failed")
	}
}
