package chatcore

import (
	"fmt"
	"strings"
	"time"

	"github.com/odekrun/odek/bot/tgformat"
)

// UTCDay is the budget day of t: its UTC date.
func UTCDay(t time.Time) string { return t.UTC().Format("2006-01-02") }

// UntilMidnightUTC is the time left until the next budget reset.
func UntilMidnightUTC(now time.Time) time.Duration {
	u := now.UTC()
	next := time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	return next.Sub(u)
}

// Usage is one chat's consumption on one UTC day.
type Usage struct {
	Day     string
	Tokens  int64
	Prompt  int64 // input tokens among Tokens
	Cached  int64 // input tokens the provider's prompt cache served
	CostUSD float64
	Jobs    int
	Warned  bool // the 80 % warning went out today
}

// Rollover returns u for the day of now: reset when the day changed.
func (u Usage) Rollover(now time.Time) Usage {
	if d := UTCDay(now); u.Day != d {
		return Usage{Day: d}
	}
	return u
}

// Verdict is what the daily budget says about a new job.
type Verdict int

const (
	BudgetOK Verdict = iota
	BudgetSpent
	// BudgetHeld: not spent, but what is left is reserved by the chat's
	// unfinished jobs.
	BudgetHeld
)

// JobAllowance decides a new job's share of a chat's daily budget (0 =
// no budget): with used tokens spent today and reserved held by the
// chat's unfinished jobs (each may still spend its own cap), the new job
// may spend at most the rest, which it then reserves. A cap of 0 with
// BudgetOK means no cap. Pure.
//
// The cap travels with the job (queue.Budget.MaxTotalTokens), so the
// worker stops the run at it with a budget outcome: a job cannot overrun
// the day, and jobs of one chat cannot each take the whole remainder.
func JobAllowance(budget, used, reserved int64) (int64, Verdict) {
	if budget <= 0 {
		return 0, BudgetOK
	}
	if used >= budget {
		return 0, BudgetSpent
	}
	left := budget - used - reserved
	if left <= 0 {
		return 0, BudgetHeld
	}
	return left, BudgetOK
}

// ShouldWarn reports whether adding a result moves Usage to or past 80 %
// of budget for the first time today. Pure.
func ShouldWarn(u Usage, budget int64) bool {
	return budget > 0 && !u.Warned && u.Tokens*5 >= budget*4
}

// HumanWait renders a wait for chat text: "12 s", "3 min", "5 h 3 min".
func HumanWait(d time.Duration) string {
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

// KeepDays is how many days of Usage history a chat keeps.
const KeepDays = 62

// DayTotal is one day's Usage of a chat.
type DayTotal struct {
	Day     string  `json:"day"`
	Tokens  int64   `json:"tokens,omitempty"`
	Prompt  int64   `json:"prompt_tokens,omitempty"`
	Cached  int64   `json:"cached_tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	Jobs    int     `json:"jobs,omitempty"`
}

func (u Usage) Total() DayTotal {
	return DayTotal{Day: u.Day, Tokens: u.Tokens, Prompt: u.Prompt, Cached: u.Cached, CostUSD: u.CostUSD, Jobs: u.Jobs}
}

func (d DayTotal) Add(o DayTotal) DayTotal {
	d.Tokens += o.Tokens
	d.Prompt += o.Prompt
	d.Cached += o.Cached
	d.CostUSD += o.CostUSD
	d.Jobs += o.Jobs
	return d
}

// LineIn renders a Total in lang: "12,345 tokens, $0.0123, 4 job(s)".
func (d DayTotal) LineIn(lang string) string {
	s := Tr(lang, "day.tokens", tgformat.Thousands(d.Tokens))
	if d.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", d.CostUSD)
	}
	s += CachedLine(lang, d.Prompt, d.Cached)
	return s + Tr(lang, "day.jobs", d.Jobs)
}

// AppendHistory adds d (when it has a day) to the history, merging a day
// already there, and drops days older than KeepDays before now. Pure.
func AppendHistory(h []DayTotal, d DayTotal, now time.Time) []DayTotal {
	if d.Day != "" {
		if n := len(h); n > 0 && h[n-1].Day == d.Day {
			h[n-1] = h[n-1].Add(d)
		} else {
			h = append(h, d)
		}
	}
	cut := UTCDay(now.AddDate(0, 0, -KeepDays))
	i := 0
	for i < len(h) && h[i].Day < cut {
		i++
	}
	if i > 0 {
		h = append([]DayTotal(nil), h[i:]...)
	}
	return h
}

// UsageLine is today's usage for /status and /usage: "Today (UTC): 1,234
// tokens of 200,000 (0 %), $0.0012, 40 input tokens from the prompt cache
// (3 %), 2 job(s)." Pure.
func UsageLine(lang string, u Usage, budget int64) string {
	s := Tr(lang, "use.today", tgformat.Thousands(u.Tokens))
	if budget > 0 {
		s += Tr(lang, "use.of", tgformat.Thousands(budget), u.Tokens*100/budget)
	}
	if u.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", u.CostUSD)
	}
	s += CachedLine(lang, u.Prompt, u.Cached)
	return s + Tr(lang, "use.jobs", u.Jobs)
}

// UsageText is /usage: today (u, already rolled to now), when the budget
// resets, the last 7 days, this month and the last 7 days of hist one by
// one. Pure.
func UsageText(lang string, u Usage, hist []DayTotal, budget int64, now time.Time) string {
	text := UsageLine(lang, u, budget) + Tr(lang, "use.resets", HumanWait(UntilMidnightUTC(now)))
	week, month := u.Total(), u.Total()
	weekStart, monthPrefix := UTCDay(now.AddDate(0, 0, -6)), now.UTC().Format("2006-01")
	for _, d := range hist {
		if d.Day >= weekStart {
			week = week.Add(d)
		}
		if strings.HasPrefix(d.Day, monthPrefix) {
			month = month.Add(d)
		}
	}
	text += "\n" + Tr(lang, "use.week", week.LineIn(lang)) + "\n" + MonthName(lang, int(now.UTC().Month())) + now.UTC().Format(" 2006") + ": " + month.LineIn(lang)
	if n := len(hist); n > 0 {
		text += "\n" + Tr(lang, "use.earlier")
		for i := n - 1; i >= max(0, n-7); i-- {
			text += "\n" + hist[i].Day + ": " + hist[i].LineIn(lang)
		}
	}
	return text
}
