package main

import (
	"strings"
	"testing"

	"github.com/odekrun/odek/bot"
)

func TestBudgetConfig(t *testing.T) {
	var cfg bot.Config
	e := env{UserBudget: "day_tokens=200000,month_usd=20", UserBudgets: "1001:day_tokens=none", GuestBudget: "day_usd=1",
		JobBudget: "tokens=50000,usd=0.5", Admins: "1001"}
	if err := budgetConfig(e, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.UserBudget.DayTokens != 200000 || cfg.UserBudget.MonthUSD != 20 || cfg.UserBudgets[1001].DayTokens != -1 ||
		cfg.GuestBudget == nil || cfg.GuestBudget.DayUSD != 1 || cfg.JobBudget.MaxTotalTokens != 50000 || cfg.JobBudget.MaxCostUSD != 0.5 || cfg.Admins[0] != 1001 {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, c := range []struct {
		e    env
		name string
	}{
		{env{UserBudget: "daily=5"}, "ODEK_TELEGRAM_USER_BUDGET"},
		{env{UserBudgets: "x:day_tokens=5"}, "ODEK_TELEGRAM_USER_BUDGETS"},
		{env{GuestBudget: "day_tokens=none"}, "ODEK_TELEGRAM_GUEST_BUDGET"}, // an open pool
		{env{JobBudget: "month_tokens=5"}, "ODEK_TELEGRAM_JOB_BUDGET"},
		{env{Admins: "root"}, "ODEK_TELEGRAM_ADMINS"},
	} {
		if err := budgetConfig(c.e, &bot.Config{}); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%+v: err = %v, want one naming %s", c.e, err, c.name)
		}
	}
}
