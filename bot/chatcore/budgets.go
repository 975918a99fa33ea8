package chatcore

import (
	"fmt"
	"strings"
	"time"

	"github.com/odekrun/odek/bot/tgformat"
	"github.com/odekrun/odek/queue"
)

// Per-user budgets (issue 26 point 5): the texts of a refusal by the
// budget store (queue.Budgets), of /usage's section about the asking user
// and of /usage all. Pure.

func init() {
	for lang, m := range budgetTexts {
		for k, v := range m {
			texts[lang][k] = v
		}
	}
}

var budgetTexts = map[string]map[string]string{
	"en": {
		"bud.user":        "🚫 You have used your %s budget of %s.",
		"bud.guest":       "🚫 Guests of this bot have used their shared %s budget of %s.",
		"bud.chat":        "🚫 This chat has used its %s budget of %s.",
		"bud.day":         "daily",
		"bud.month":       "monthly",
		"bud.reset.day":   " It resets at 00:00 UTC (in %s).",
		"bud.reset.month": " It resets on %s at 00:00 UTC (in %s).",
		"bud.stopped":     "🚫 The job stopped: it used what was left of your budget. /usage shows what you have used.",
		"bud.you":         "You",
		"bud.guests":      "Guests (shared pool)",
		"bud.today":       "%s, today (UTC): %s",
		"bud.month.line":  "This month: %s",
		"bud.caps":        "Your caps: %s.",
		"bud.nocaps":      "No personal caps are set.",
		"bud.cap.day":     "%s a day",
		"bud.cap.month":   "%s a month",
		"bud.held":        " (%s tokens reserved by running jobs)",
		"bud.days":        "Your last days:",
		"bud.months":      "Your earlier months:",
		"bud.all":         "Usage by account (UTC), most recently active first:",
		"bud.all.line":    "%s: today %s; this month %s",
		"bud.all.none":    "No usage recorded yet.",
		"bud.admins":      "Only the bot's admins (ODEK_TELEGRAM_ADMINS) can use /usage all, in a private chat with the bot.",
		"bud.nostore":     "Per-user usage is not available: this bot's queue keeps no budgets.",
		"bud.wait":        "⏳ What is left of your budget is reserved by your running jobs. Send this again when they have finished.",
	},
	"de": {
		"bud.user":        "🚫 Du hast dein %s Budget von %s verbraucht.",
		"bud.guest":       "🚫 Die Gäste dieses Bots haben ihr gemeinsames %s Budget von %s verbraucht.",
		"bud.chat":        "🚫 Dieser Chat hat sein %s Budget von %s verbraucht.",
		"bud.day":         "tägliches",
		"bud.month":       "monatliches",
		"bud.reset.day":   " Es wird um 00:00 UTC zurückgesetzt (in %s).",
		"bud.reset.month": " Es wird am %s um 00:00 UTC zurückgesetzt (in %s).",
		"bud.stopped":     "🚫 Der Auftrag wurde angehalten: er hat den Rest deines Budgets verbraucht. /usage zeigt deinen Verbrauch.",
		"bud.you":         "Du",
		"bud.guests":      "Gäste (gemeinsames Budget)",
		"bud.today":       "%s, heute (UTC): %s",
		"bud.month.line":  "Dieser Monat: %s",
		"bud.caps":        "Deine Grenzen: %s.",
		"bud.nocaps":      "Für dich sind keine persönlichen Grenzen gesetzt.",
		"bud.cap.day":     "%s pro Tag",
		"bud.cap.month":   "%s pro Monat",
		"bud.held":        " (%s Tokens von laufenden Aufträgen reserviert)",
		"bud.days":        "Deine letzten Tage:",
		"bud.months":      "Deine früheren Monate:",
		"bud.all":         "Verbrauch nach Konto (UTC), zuletzt aktive zuerst:",
		"bud.all.line":    "%s: heute %s; dieser Monat %s",
		"bud.all.none":    "Noch kein Verbrauch erfasst.",
		"bud.admins":      "Nur die Admins des Bots (ODEK_TELEGRAM_ADMINS) können /usage all verwenden, im privaten Chat mit dem Bot.",
		"bud.nostore":     "Der Verbrauch pro Person ist nicht verfügbar: die Warteschlange dieses Bots führt keine Budgets.",
		"bud.wait":        "⏳ Der Rest deines Budgets ist von deinen laufenden Aufträgen reserviert. Sende das noch einmal, wenn sie fertig sind.",
	},
}

// BudgetAmount renders a cap's figure: "20,000 tokens" or "$1.50".
func BudgetAmount(lang, limit string, v float64) string {
	if limit == queue.LimitDayUSD || limit == queue.LimitMonthUSD {
		return fmt.Sprintf("$%.2f", v)
	}
	return Tr(lang, "day.tokens", tgformat.Thousands(int64(v)))
}

// BudgetRefusal is the reply to a request the budget store refused (a
// GrantSpent): whose budget, which period and cap, and when it resets.
func BudgetRefusal(lang string, g queue.Grant, now time.Time) string {
	key := "bud.user"
	switch {
	case g.Account == queue.GuestAccount:
		key = "bud.guest"
	case strings.HasPrefix(g.Account, "chat:"):
		key = "bud.chat"
	}
	month := g.Limit == queue.LimitMonthTokens || g.Limit == queue.LimitMonthUSD
	period := Tr(lang, "bud.day")
	if month {
		period = Tr(lang, "bud.month")
	}
	s := Tr(lang, key, period, BudgetAmount(lang, g.Limit, g.Max))
	wait := HumanWait(g.ResetAt.Sub(now))
	if month {
		return s + Tr(lang, "bud.reset.month", g.ResetAt.UTC().Format("2006-01-02"), wait)
	}
	return s + Tr(lang, "bud.reset.day", wait)
}

func spendTotal(period string, s queue.Spend) DayTotal {
	return DayTotal{Day: period, Tokens: s.Tokens, Prompt: s.Prompt, Cached: s.Cached, CostUSD: s.USD, Jobs: int(s.Jobs)}
}

// capsLine lists caps: "20,000 tokens a day, $10.00 a month".
func capsLine(lang string, c queue.Caps) string {
	var parts []string
	for _, x := range []struct {
		limit string
		v     float64
	}{{queue.LimitDayTokens, float64(c.DayTokens)}, {queue.LimitMonthTokens, float64(c.MonthTokens)}, {queue.LimitDayUSD, c.DayUSD}, {queue.LimitMonthUSD, c.MonthUSD}} {
		if x.v <= 0 {
			continue
		}
		key := "bud.cap.day"
		if strings.HasPrefix(x.limit, "month") {
			key = "bud.cap.month"
		}
		parts = append(parts, Tr(lang, key, BudgetAmount(lang, x.limit, x.v)))
	}
	return strings.Join(parts, ", ")
}

// UserUsageText is /usage's section about the asking user (or, for a
// guest, the guest pool): today and this month with the cache share,
// the caps, and the last 7 days and earlier months of the history.
func UserUsageText(lang string, u queue.AccountUsage, caps queue.Caps, guest bool, now time.Time) string {
	who := Tr(lang, "bud.you")
	if guest {
		who = Tr(lang, "bud.guests")
	}
	lines := []string{Tr(lang, "bud.today", who, spendTotal(queue.Day(now), u.Today(now)).LineIn(lang))}
	if u.ReservedTokens > 0 {
		lines[0] += Tr(lang, "bud.held", tgformat.Thousands(u.ReservedTokens))
	}
	lines = append(lines, Tr(lang, "bud.month.line", spendTotal(queue.Month(now), u.Month(now)).LineIn(lang)))
	if c := capsLine(lang, caps); c != "" {
		lines = append(lines, Tr(lang, "bud.caps", c))
	} else {
		lines = append(lines, Tr(lang, "bud.nocaps"))
	}
	var days []string
	for _, d := range u.Days {
		if d.Period != queue.Day(now) && len(days) < 7 {
			days = append(days, d.Period+": "+spendTotal(d.Period, d.Spend).LineIn(lang))
		}
	}
	if len(days) > 0 {
		lines = append(lines, Tr(lang, "bud.days"))
		lines = append(lines, days...)
	}
	var months []string
	for _, m := range u.Months {
		if m.Period != queue.Month(now) {
			months = append(months, m.Period+": "+spendTotal(m.Period, m.Spend).LineIn(lang))
		}
	}
	if len(months) > 0 {
		lines = append(lines, Tr(lang, "bud.months"))
		lines = append(lines, months...)
	}
	return strings.Join(lines, "\n")
}

// AllUsageLine is one account's line of /usage all; label names it.
func AllUsageLine(lang, label string, u queue.AccountUsage, now time.Time) string {
	return Tr(lang, "bud.all.line", label, spendTotal("", u.Today(now)).LineIn(lang), spendTotal("", u.Month(now)).LineIn(lang))
}

// BudgetStopped reports whether a failed result's error is the stop at a
// cap the job carried (total tokens or cost).
func BudgetStopped(res queue.Result) bool {
	return res.Status == queue.StatusFailed && (strings.Contains(res.Error, DayCapExhausted) || strings.Contains(res.Error, "budget: cost_usd limit exhausted"))
}
