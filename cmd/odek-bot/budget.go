package main

import (
	"fmt"
	"strings"

	"github.com/odekrun/odek/bot"
	"github.com/odekrun/odek/queue"
)

// budgetConfig reads the per-user budget variables into cfg (issue 26
// point 5; bot/budgets.go). Errors name the variable.
func budgetConfig(e env, cfg *bot.Config) error {
	var err error
	if cfg.UserBudget, err = bot.ParseCaps(e.UserBudget); err != nil {
		return fmt.Errorf("ODEK_TELEGRAM_USER_BUDGET: %w", err)
	}
	if cfg.UserBudgets, err = bot.ParseUserCaps(e.UserBudgets); err != nil {
		return fmt.Errorf("ODEK_TELEGRAM_USER_BUDGETS: %w", err)
	}
	if e.GuestBudget != "" {
		g, err := bot.ParseCaps(e.GuestBudget)
		if err != nil {
			return fmt.Errorf("ODEK_TELEGRAM_GUEST_BUDGET: %w", err)
		}
		if (queue.Caps{}.Over(g)).IsZero() {
			return fmt.Errorf("ODEK_TELEGRAM_GUEST_BUDGET: %q sets no cap: the guest pool needs at least one (an open pool would let anyone in a group spend without a bound)", e.GuestBudget)
		}
		cfg.GuestBudget = &g
	}
	if e.JobBudget != "" {
		// The same grammar as the caps, with the per-job names.
		c, err := bot.ParseCaps(strings.NewReplacer("tokens=", "day_tokens=", "usd=", "day_usd=").Replace(strings.ReplaceAll(e.JobBudget, " ", "")))
		if err != nil || c.DayTokens < 0 || c.DayUSD < 0 || c.MonthTokens != 0 || c.MonthUSD != 0 {
			return fmt.Errorf("ODEK_TELEGRAM_JOB_BUDGET: %q: want tokens=N,usd=X (numbers >= 0)", e.JobBudget)
		}
		cfg.JobBudget.MaxTotalTokens, cfg.JobBudget.MaxCostUSD = int(c.DayTokens), c.DayUSD
	}
	if cfg.Admins, err = bot.ParseIDs(e.Admins); err != nil {
		return fmt.Errorf("ODEK_TELEGRAM_ADMINS: %w", err)
	}
	return nil
}
