package chatcore

import (
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

func TestBudgetRefusal(t *testing.T) {
	now := time.Date(2026, 12, 3, 18, 57, 0, 0, time.UTC)
	for _, c := range []struct {
		lang string
		g    queue.Grant
		want string
	}{
		{"en", queue.Grant{Account: "user:7", Limit: queue.LimitDayTokens, Max: 20000, ResetAt: queue.ResetAt(queue.LimitDayTokens, now)},
			"🚫 You have used your daily budget of 20,000 tokens. It resets at 00:00 UTC (in 5 h 3 min)."},
		{"de", queue.Grant{Account: "user:7", Limit: queue.LimitMonthUSD, Max: 10, ResetAt: queue.ResetAt(queue.LimitMonthUSD, now)},
			"🚫 Du hast dein monatliches Budget von $10.00 verbraucht. Es wird am 2027-01-01 um 00:00 UTC zurückgesetzt (in 28 d)."},
		{"en", queue.Grant{Account: queue.GuestAccount, Limit: queue.LimitDayTokens, Max: 50000, ResetAt: queue.ResetAt(queue.LimitDayTokens, now)},
			"🚫 Guests of this bot have used their shared daily budget of 50,000 tokens."},
		{"en", queue.Grant{Account: "chat:-5", Limit: queue.LimitDayTokens, Max: 1000, ResetAt: queue.ResetAt(queue.LimitDayTokens, now)},
			"🚫 This chat has used its daily budget of 1,000 tokens."},
	} {
		if got := BudgetRefusal(c.lang, c.g, now); !strings.HasPrefix(got, c.want) {
			t.Errorf("BudgetRefusal(%s, %+v) = %q, want %q", c.lang, c.g, got, c.want)
		}
	}
}

// Every budget text exists in both languages.
func TestBudgetTextsInBothLanguages(t *testing.T) {
	for k := range budgetTexts["en"] {
		if _, ok := budgetTexts["de"][k]; !ok {
			t.Errorf("%s has no German text", k)
		}
	}
}
