package embedded_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/queue/queuetest"
)

func TestBudgetsConformance(t *testing.T) {
	queuetest.RunBudgets(t, func(t *testing.T) queue.Budgets {
		return openT(t, filepath.Join(t.TempDir(), "store.db"), queue.Options{})
	})
}

// Spend counted and reservations granted survive a restart of the
// process (the book is read back from the file).
func TestBudgetsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s, err := embedded.Open(path, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	user := queue.AccountCaps{Account: "user:1", Caps: queue.Caps{DayTokens: 1000}}
	if _, err := s.SettleBudget(ctx, "j1", []string{"user:1"}, queue.Spend{Tokens: 300, Jobs: 1}, now); err != nil {
		t.Fatal(err)
	}
	if g, err := s.ReserveBudget(ctx, queue.Reservation{ID: "j2", Accounts: []queue.AccountCaps{user}, Lease: time.Hour, Now: now}); err != nil || g.Tokens != 700 {
		t.Fatalf("grant = %+v, %v", g, err)
	}
	if err := s.PutBudgetPolicy(ctx, queue.BudgetPolicy{ChatDayTokens: 42}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, queue.Options{})
	u, err := s.BudgetUsage(ctx, "user:1", now)
	if err != nil || u.Today(now).Tokens != 300 || u.ReservedTokens != 700 {
		t.Fatalf("after reopen: %+v, %v: want 300 spent and 700 held", u, err)
	}
	if ok, _ := s.SettleBudget(ctx, "j1", nil, queue.Spend{Tokens: 300}, now); ok {
		t.Fatal("j1 counted again after the reopen")
	}
	if p, ok, _ := s.BudgetPolicy(ctx); !ok || p.ChatDayTokens != 42 {
		t.Fatalf("policy after reopen = %+v, %v", p, ok)
	}
}
