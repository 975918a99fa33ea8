package bot

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// userRates is the per-user job rate: a token bucket per user
// (golang.org/x/time/rate) of perMinute jobs a minute with a burst of the
// same size, shared by all chats. perMinute <= 0 means no limit.
type userRates struct {
	mu        sync.Mutex
	perMinute int
	m         map[int64]*rate.Limiter
}

func newUserRates(perMinute int) *userRates {
	return &userRates{perMinute: perMinute, m: map[int64]*rate.Limiter{}}
}

// take takes one job from the user's bucket at now. It reports whether the
// job may start and, when not, how long until it may.
func (u *userRates) take(userID int64, now time.Time) (bool, time.Duration) {
	if u.perMinute <= 0 {
		return true, 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	l := u.m[userID]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(float64(u.perMinute)/60), u.perMinute)
		u.m[userID] = l
	}
	return takeAt(l, now)
}

// allows reports, without taking anything, whether the user's bucket
// holds a job at now and, when not, how long until it does: the check
// made before a user's file is fetched (the job it becomes takes the
// token).
func (u *userRates) allows(userID int64, now time.Time) (bool, time.Duration) {
	if u.perMinute <= 0 {
		return true, 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	l := u.m[userID]
	if l == nil {
		return true, 0
	}
	if tok := l.TokensAt(now); tok < 1 {
		return false, time.Duration((1 - tok) / float64(l.Limit()) * float64(time.Second))
	}
	return true, 0
}

// takeAt takes a token from l at now without waiting: whether it was
// taken, and if not how long until one is there.
func takeAt(l *rate.Limiter, now time.Time) (bool, time.Duration) {
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// prune forgets the users whose bucket is full again: a fresh bucket is
// the same.
func (u *userRates) prune(now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, l := range u.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(u.m, id)
		}
	}
}

// len is how many users have a bucket (tests).
func (u *userRates) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
}

// utcDay is the budget day of t: its UTC date.
func utcDay(t time.Time) string { return t.UTC().Format("2006-01-02") }

// untilMidnightUTC is the time left until the next budget reset.
func untilMidnightUTC(now time.Time) time.Duration {
	u := now.UTC()
	next := time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	return next.Sub(u)
}

// usage is one chat's consumption on one UTC day.
type usage struct {
	day     string
	tokens  int64
	prompt  int64 // input tokens among tokens
	cached  int64 // input tokens the provider's prompt cache served
	costUSD float64
	jobs    int
	warned  bool // the 80 % warning went out today
}

// rollover returns u for the day of now: reset when the day changed.
func (u usage) rollover(now time.Time) usage {
	if d := utcDay(now); u.day != d {
		return usage{day: d}
	}
	return u
}

// budgetVerdict is what the daily budget says about a new job.
type budgetVerdict int

const (
	budgetOK budgetVerdict = iota
	budgetSpent
	// budgetHeld: not spent, but what is left is reserved by the chat's
	// unfinished jobs.
	budgetHeld
)

// jobAllowance decides a new job's share of a chat's daily budget (0 =
// no budget): with used tokens spent today and reserved held by the
// chat's unfinished jobs (each may still spend its own cap), the new job
// may spend at most the rest, which it then reserves. A cap of 0 with
// budgetOK means no cap. Pure.
//
// The cap travels with the job (queue.Budget.MaxTotalTokens), so the
// worker stops the run at it with a budget outcome: a job cannot overrun
// the day, and jobs of one chat cannot each take the whole remainder.
func jobAllowance(budget, used, reserved int64) (int64, budgetVerdict) {
	if budget <= 0 {
		return 0, budgetOK
	}
	if used >= budget {
		return 0, budgetSpent
	}
	left := budget - used - reserved
	if left <= 0 {
		return 0, budgetHeld
	}
	return left, budgetOK
}

// shouldWarn reports whether adding a result moves usage to or past 80 %
// of budget for the first time today. Pure.
func shouldWarn(u usage, budget int64) bool {
	return budget > 0 && !u.warned && u.tokens*5 >= budget*4
}

// humanWait renders a wait for chat text: "12 s", "3 min", "5 h 3 min".
func humanWait(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(1, int(d.Round(time.Second).Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
	default:
		h := int(d / time.Hour)
		return fmt.Sprintf("%d h %d min", h, int((d-time.Duration(h)*time.Hour)/time.Minute))
	}
}

// keepDays is how many days of usage history a chat keeps.
const keepDays = 62

// dayTotal is one day's usage of a chat.
type dayTotal struct {
	Day     string  `json:"day"`
	Tokens  int64   `json:"tokens,omitempty"`
	Prompt  int64   `json:"prompt_tokens,omitempty"`
	Cached  int64   `json:"cached_tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	Jobs    int     `json:"jobs,omitempty"`
}

func (u usage) total() dayTotal {
	return dayTotal{Day: u.day, Tokens: u.tokens, Prompt: u.prompt, Cached: u.cached, CostUSD: u.costUSD, Jobs: u.jobs}
}

func (d dayTotal) add(o dayTotal) dayTotal {
	d.Tokens += o.Tokens
	d.Prompt += o.Prompt
	d.Cached += o.Cached
	d.CostUSD += o.CostUSD
	d.Jobs += o.Jobs
	return d
}

// lineIn renders a total in lang: "12,345 tokens, $0.0123, 4 job(s)".
func (d dayTotal) lineIn(lang string) string {
	s := tr(lang, "day.tokens", Thousands(d.Tokens))
	if d.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", d.CostUSD)
	}
	s += cachedLine(lang, d.Prompt, d.Cached)
	return s + tr(lang, "day.jobs", d.Jobs)
}

// appendHistory adds d (when it has a day) to the history, merging a day
// already there, and drops days older than keepDays before now. Pure.
func appendHistory(h []dayTotal, d dayTotal, now time.Time) []dayTotal {
	if d.Day != "" {
		if n := len(h); n > 0 && h[n-1].Day == d.Day {
			h[n-1] = h[n-1].add(d)
		} else {
			h = append(h, d)
		}
	}
	cut := utcDay(now.AddDate(0, 0, -keepDays))
	i := 0
	for i < len(h) && h[i].Day < cut {
		i++
	}
	if i > 0 {
		h = append([]dayTotal(nil), h[i:]...)
	}
	return h
}
