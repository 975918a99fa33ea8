package queue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/queue/queuetest"
)

// budgetLifecycle is what one typed job costs the budget store: a
// reservation against its chat's and its user's caps, then the settle of
// its usage (on Redis: 1 round trip, then 2). Users rotate over 50, so
// the accounts hold some history and live reservations.
func budgetLifecycle(b *testing.B, st queue.Budgets) {
	ctx := context.Background()
	now := time.Now()
	p := queue.BudgetPolicy{ChatDayTokens: 1 << 40, User: queue.Caps{DayTokens: 1 << 40, MonthUSD: 1e9}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("j%d", i)
		r := queue.Reservation{ID: id, Accounts: p.Charged(int64(i%50+1), int64(i%50+1)), Lease: time.Hour, Now: now}
		if g, err := st.ReserveBudget(ctx, r); err != nil || g.Verdict != queue.GrantOK {
			b.Fatalf("reserve: %+v %v", g, err)
		}
		if _, err := st.SettleBudget(ctx, id, nil, queue.Spend{Tokens: 1200, Prompt: 1000, Cached: 400, USD: 0.001, Jobs: 1}, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBudgetReserveSettleRedis(b *testing.B) {
	q, err := queue.NewRedis(context.Background(), queuetest.StartRedis(b), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	budgetLifecycle(b, q)
}

// The peer in the same run: one Enqueue (one script, one round trip) on
// the same kind of server.
func BenchmarkBudgetPeerEnqueueRedis(b *testing.B) {
	q, err := queue.NewRedis(context.Background(), queuetest.StartRedis(b), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i%50 + 1), Goal: "noop"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBudgetReserveSettleMemory(b *testing.B) {
	budgetLifecycle(b, queue.NewMemory(queue.Options{}))
}

func BenchmarkBudgetReserveSettleEmbedded(b *testing.B) {
	s, err := embedded.Open(filepath.Join(b.TempDir(), "store.db"), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	budgetLifecycle(b, s)
}
