package queuetest

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// NewBudgets builds a fresh, empty budget store for one subtest.
type NewBudgets func(t *testing.T) queue.Budgets

// RunBudgets is the conformance suite of queue.Budgets: Redis, Memory and
// the embedded store must pass it unchanged.
func RunBudgets(t *testing.T, nb NewBudgets) {
	t.Run("GrantIsWhatIsLeft", func(t *testing.T) { testGrantLeft(t, nb(t)) })
	t.Run("SpentIsRefusedUntilReset", func(t *testing.T) { testSpent(t, nb(t)) })
	t.Run("HeldUntilReleasedOrSettled", func(t *testing.T) { testHeld(t, nb(t)) })
	t.Run("SettleCountsOnce", func(t *testing.T) { testSettleOnce(t, nb(t)) })
	t.Run("LeaseEndsAReservation", func(t *testing.T) { testLeaseEnds(t, nb(t)) })
	t.Run("ConcurrentReservationsNeverOverbook", func(t *testing.T) { testNoOverbook(t, nb(t)) })
	t.Run("USDCaps", func(t *testing.T) { testUSD(t, nb(t)) })
	t.Run("HistoryAndAccounts", func(t *testing.T) { testHistory(t, nb(t)) })
	t.Run("Policy", func(t *testing.T) { testPolicy(t, nb(t)) })
	t.Run("InvalidRequests", func(t *testing.T) { testBudgetInvalid(t, nb(t)) })
	t.Run("Batch", func(t *testing.T) { testBudgetBatch(t, nb(t)) })
}

// A store with ReserveBudgetAll decides each element as ReserveBudget
// would, in order.
func testBudgetBatch(t *testing.T, b queue.Budgets) {
	bb, ok := b.(queue.BudgetBatch)
	if !ok {
		t.Skip("the store has no batch reservation")
	}
	var rs []queue.Reservation
	for _, id := range []string{"b1", "b2", "b3", "b4"} {
		r := res(id, budgetNow, acct("user:1", queue.Caps{DayTokens: 1000}))
		r.MaxTokens = 400
		rs = append(rs, r)
	}
	rs = append(rs, queue.Reservation{ID: "bad"})
	gs, errs := bb.ReserveBudgetAll(ctxT(t), rs)
	want := []int64{400, 400, 200}
	for i, w := range want {
		if errs[i] != nil || gs[i].Verdict != queue.GrantOK || gs[i].Tokens != w {
			t.Errorf("element %d = %+v, %v; want %d", i, gs[i], errs[i], w)
		}
	}
	if errs[3] != nil || gs[3].Verdict != queue.GrantHeld {
		t.Errorf("element 3 = %+v, %v; want held", gs[3], errs[3])
	}
	if !errors.Is(errs[4], queue.ErrBudgetInvalid) {
		t.Errorf("invalid element: %v", errs[4])
	}
}

var budgetNow = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func res(id string, now time.Time, acs ...queue.AccountCaps) queue.Reservation {
	return queue.Reservation{ID: id, Accounts: acs, Lease: time.Hour, Now: now}
}

func acct(name string, c queue.Caps) queue.AccountCaps {
	return queue.AccountCaps{Account: name, Caps: c}
}

func reserve(t *testing.T, b queue.Budgets, r queue.Reservation) queue.Grant {
	t.Helper()
	g, err := b.ReserveBudget(ctxT(t), r)
	if err != nil {
		t.Fatalf("ReserveBudget(%s): %v", r.ID, err)
	}
	return g
}

func settle(t *testing.T, b queue.Budgets, id string, accounts []string, s queue.Spend, now time.Time) bool {
	t.Helper()
	ok, err := b.SettleBudget(ctxT(t), id, accounts, s, now)
	if err != nil {
		t.Fatalf("SettleBudget(%s): %v", id, err)
	}
	return ok
}

// The share is the least any account has left, bounded by MaxTokens;
// an account without caps bounds nothing.
func testGrantLeft(t *testing.T, b queue.Budgets) {
	user := acct("user:1", queue.Caps{DayTokens: 1000, MonthTokens: 600})
	chat := acct("chat:1", queue.Caps{})
	g := reserve(t, b, res("j1", budgetNow, chat, user))
	if g.Verdict != queue.GrantOK || g.Tokens != 600 || g.USD != 0 {
		t.Fatalf("grant = %+v, want ok with 600 tokens (the month's cap is the lower)", g)
	}
	r := res("j2", budgetNow, acct("user:2", queue.Caps{DayTokens: 1000}))
	r.MaxTokens = 250
	if g := reserve(t, b, r); g.Tokens != 250 {
		t.Fatalf("grant = %+v, want 250 (the per-job bound)", g)
	}
	if g := reserve(t, b, res("j3", budgetNow, acct("user:3", queue.Caps{}))); g.Verdict != queue.GrantOK || g.Tokens != 0 {
		t.Fatalf("no caps: grant = %+v, want ok without a cap", g)
	}
	// The same id again: the same grant, not a second reservation.
	if g := reserve(t, b, res("j1", budgetNow, chat, user)); g.Verdict != queue.GrantOK || g.Tokens != 600 {
		t.Fatalf("reserving j1 again = %+v, want its grant of 600", g)
	}
	u, err := b.BudgetUsage(ctxT(t), "user:1", budgetNow)
	if err != nil || u.ReservedTokens != 600 {
		t.Fatalf("user:1 holds %d (%v), want 600 once", u.ReservedTokens, err)
	}
}

func testSpent(t *testing.T, b queue.Budgets) {
	user := acct("user:1", queue.Caps{DayTokens: 1000, MonthTokens: 5000})
	reserve(t, b, res("j1", budgetNow, user))
	settle(t, b, "j1", nil, queue.Spend{Tokens: 1000, Jobs: 1}, budgetNow)
	g := reserve(t, b, res("j2", budgetNow, user))
	if g.Verdict != queue.GrantSpent || g.Account != "user:1" || g.Limit != queue.LimitDayTokens || g.Used != 1000 || g.Max != 1000 {
		t.Fatalf("grant = %+v, want spent on user:1's day_tokens at 1000/1000", g)
	}
	if want := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC); !g.ResetAt.Equal(want) {
		t.Fatalf("ResetAt = %v, want %v", g.ResetAt, want)
	}
	// The next UTC day: the day's cap is fresh, the month's spend stays.
	tomorrow := budgetNow.Add(16 * time.Hour)
	if g := reserve(t, b, res("j3", tomorrow, user)); g.Verdict != queue.GrantOK || g.Tokens != 1000 {
		t.Fatalf("next day: grant = %+v, want 1000", g)
	}
	b.ReleaseBudget(ctxT(t), "j3")
	settle(t, b, "j4", []string{"user:1"}, queue.Spend{Tokens: 4000}, tomorrow)
	g = reserve(t, b, res("j5", tomorrow.Add(time.Hour), acct("user:1", queue.Caps{MonthTokens: 5000})))
	if g.Verdict != queue.GrantSpent || g.Limit != queue.LimitMonthTokens {
		t.Fatalf("grant = %+v, want spent on month_tokens", g)
	}
	if want := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC); !g.ResetAt.Equal(want) {
		t.Fatalf("month ResetAt = %v, want %v", g.ResetAt, want)
	}
}

func testHeld(t *testing.T, b queue.Budgets) {
	user := acct("user:1", queue.Caps{DayTokens: 1000})
	if g := reserve(t, b, res("j1", budgetNow, user)); g.Tokens != 1000 {
		t.Fatalf("first grant = %+v", g)
	}
	g := reserve(t, b, res("j2", budgetNow, user))
	if g.Verdict != queue.GrantHeld || g.Account != "user:1" || g.Limit != queue.LimitDayTokens {
		t.Fatalf("second grant = %+v, want held on user:1's day_tokens", g)
	}
	if err := b.ReleaseBudget(ctxT(t), "j1"); err != nil {
		t.Fatal(err)
	}
	if g := reserve(t, b, res("j2", budgetNow, user)); g.Verdict != queue.GrantOK || g.Tokens != 1000 {
		t.Fatalf("after the release: grant = %+v, want 1000", g)
	}
	if !settle(t, b, "j2", nil, queue.Spend{Tokens: 300, Jobs: 1}, budgetNow) {
		t.Fatal("settling j2 counted nothing")
	}
	if g := reserve(t, b, res("j3", budgetNow, user)); g.Verdict != queue.GrantOK || g.Tokens != 700 {
		t.Fatalf("after the settle: grant = %+v, want the 700 left", g)
	}
}

func testSettleOnce(t *testing.T, b queue.Budgets) {
	accts := []queue.AccountCaps{acct("chat:-5", queue.Caps{DayTokens: 10000}), acct("user:1", queue.Caps{})}
	reserve(t, b, res("j1", budgetNow, accts...))
	s := queue.Spend{Tokens: 120, Prompt: 100, Cached: 40, USD: 0.0125, Jobs: 1}
	if !settle(t, b, "j1", nil, s, budgetNow) {
		t.Fatal("first settle counted nothing")
	}
	if settle(t, b, "j1", nil, s, budgetNow) {
		t.Fatal("second settle of j1 counted again")
	}
	for _, a := range []string{"chat:-5", "user:1"} {
		u, err := b.BudgetUsage(ctxT(t), a, budgetNow)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Today(budgetNow); got.Tokens != 120 || got.Prompt != 100 || got.Cached != 40 || math.Abs(got.USD-0.0125) > 1e-9 || got.Jobs != 1 {
			t.Errorf("%s today = %+v, want the spend once", a, got)
		}
		if u.ReservedTokens != 0 {
			t.Errorf("%s still holds %d after the settle", a, u.ReservedTokens)
		}
	}
	// Settled: reserving it again is an error, not a new reservation.
	if _, err := b.ReserveBudget(ctxT(t), res("j1", budgetNow, accts...)); !errors.Is(err, queue.ErrBudgetSettled) {
		t.Fatalf("reserving a settled id: err = %v, want ErrBudgetSettled", err)
	}
	// No record (a result of a job that never reserved): the caller's
	// accounts are charged.
	if !settle(t, b, "j9", []string{"user:7"}, queue.Spend{Tokens: 5}, budgetNow) {
		t.Fatal("settling an unreserved id counted nothing")
	}
	if u, _ := b.BudgetUsage(ctxT(t), "user:7", budgetNow); u.Today(budgetNow).Tokens != 5 {
		t.Fatalf("user:7 = %+v", u)
	}
	// Releasing a settled id changes nothing.
	if err := b.ReleaseBudget(ctxT(t), "j1"); err != nil {
		t.Fatal(err)
	}
	if settle(t, b, "j1", nil, s, budgetNow) {
		t.Fatal("a release reopened a settled reservation")
	}
}

// A front end that dies leaks nothing: past its lease a reservation no
// longer holds.
func testLeaseEnds(t *testing.T, b queue.Budgets) {
	user := acct("user:1", queue.Caps{DayTokens: 1000})
	reserve(t, b, res("j1", budgetNow, user))
	if g := reserve(t, b, res("j2", budgetNow.Add(59*time.Minute), user)); g.Verdict != queue.GrantHeld {
		t.Fatalf("within the lease: grant = %+v, want held", g)
	}
	later := budgetNow.Add(61 * time.Minute)
	if g := reserve(t, b, res("j2", later, user)); g.Verdict != queue.GrantOK || g.Tokens != 1000 {
		t.Fatalf("after the lease: grant = %+v, want 1000", g)
	}
	// The late result of the expired job still counts, once.
	if !settle(t, b, "j1", nil, queue.Spend{Tokens: 200}, later) {
		t.Fatal("the expired reservation's result was not counted")
	}
	u, _ := b.BudgetUsage(ctxT(t), "user:1", later)
	if u.Today(later).Tokens != 200 || u.ReservedTokens != 1000 {
		t.Fatalf("user:1 = %+v, want 200 spent and j2's 1000 held", u)
	}
}

// Many reservations at once (two bots, N workers) never grant more than
// the cap in total.
func testNoOverbook(t *testing.T, b queue.Budgets) {
	const n = 24
	var mu sync.Mutex
	var total int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := res("c"+string(rune('a'+i)), budgetNow, acct("chat:1", queue.Caps{DayTokens: 10000}), acct("user:1", queue.Caps{DayTokens: 1000}))
			r.MaxTokens = 300
			g, err := b.ReserveBudget(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			total += g.Tokens
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 1000 {
		t.Fatalf("granted %d tokens in total against a cap of 1000, want exactly 1000 (300+300+300+100)", total)
	}
}

func testUSD(t *testing.T, b queue.Budgets) {
	user := acct("user:1", queue.Caps{DayUSD: 0.50, MonthUSD: 10})
	r := res("j1", budgetNow, user)
	r.MaxUSD = 0.2
	if g := reserve(t, b, r); g.Verdict != queue.GrantOK || math.Abs(g.USD-0.2) > 1e-9 || g.Tokens != 0 {
		t.Fatalf("grant = %+v, want $0.20 and no token cap", g)
	}
	settle(t, b, "j1", nil, queue.Spend{Tokens: 10, USD: 0.45}, budgetNow)
	if g := reserve(t, b, res("j2", budgetNow, user)); g.Verdict != queue.GrantOK || math.Abs(g.USD-0.05) > 1e-9 {
		t.Fatalf("grant = %+v, want the $0.05 left", g)
	}
	settle(t, b, "j2", nil, queue.Spend{USD: 0.06}, budgetNow)
	g := reserve(t, b, res("j3", budgetNow, user))
	if g.Verdict != queue.GrantSpent || g.Limit != queue.LimitDayUSD || math.Abs(g.Used-0.51) > 1e-9 || g.Max != 0.5 {
		t.Fatalf("grant = %+v, want spent on day_usd at $0.51 of $0.50", g)
	}
}

func testHistory(t *testing.T, b queue.Budgets) {
	for i, day := range []time.Time{budgetNow.AddDate(0, 0, -40), budgetNow.AddDate(0, 0, -3), budgetNow.AddDate(0, 0, -1), budgetNow} {
		settle(t, b, "h"+string(rune('a'+i)), []string{"user:1"}, queue.Spend{Tokens: int64(100 * (i + 1)), Jobs: 1}, day)
	}
	settle(t, b, "x", []string{"user:2"}, queue.Spend{Tokens: 1}, budgetNow.Add(-time.Hour))
	u, err := b.BudgetUsage(ctxT(t), "user:1", budgetNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Days) != 3 || u.Days[0].Period != "2026-12-03" || u.Days[0].Tokens != 400 || u.Days[2].Period != "2026-11-30" {
		t.Fatalf("days = %+v, want 3 days newest first (the one 40 days back is past the history)", u.Days)
	}
	if len(u.Months) != 3 || u.Months[0].Period != "2026-12" || u.Months[0].Tokens != 700 || u.Months[1].Tokens != 200 || u.Months[2].Period != "2026-10" {
		t.Fatalf("months = %+v", u.Months)
	}
	accts, err := b.BudgetAccounts(ctxT(t), 0)
	if err != nil || len(accts) != 2 || accts[0] != "user:1" {
		t.Fatalf("accounts = %v, %v: want user:1 (latest) then user:2", accts, err)
	}
	if one, _ := b.BudgetAccounts(ctxT(t), 1); len(one) != 1 {
		t.Fatalf("accounts(1) = %v", one)
	}
}

func testPolicy(t *testing.T, b queue.Budgets) {
	if _, ok, err := b.BudgetPolicy(ctxT(t)); ok || err != nil {
		t.Fatalf("empty store: policy ok=%v err=%v", ok, err)
	}
	p := queue.BudgetPolicy{ChatDayTokens: 5000, User: queue.Caps{DayTokens: 100}, Users: map[int64]queue.Caps{7: {DayTokens: 900}},
		Guest: &queue.Caps{DayUSD: 1}, AllowedUsers: []int64{7}}
	if err := b.PutBudgetPolicy(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.BudgetPolicy(ctxT(t))
	if err != nil || !ok || got.ChatDayTokens != 5000 || got.UserCaps(7).DayTokens != 900 || got.Guest == nil || got.Guest.DayUSD != 1 {
		t.Fatalf("policy = %+v, %v, %v", got, ok, err)
	}
}

func testBudgetInvalid(t *testing.T, b queue.Budgets) {
	for _, tc := range []struct {
		name string
		r    queue.Reservation
	}{
		{"no accounts", queue.Reservation{ID: "j", Lease: time.Hour, Now: budgetNow}},
		{"bad account", res("j", budgetNow, acct("User 1", queue.Caps{}))},
		{"twice", res("j", budgetNow, acct("user:1", queue.Caps{}), acct("user:1", queue.Caps{}))},
		{"negative cap", res("j", budgetNow, acct("user:1", queue.Caps{DayTokens: -1}))},
		{"bad id", res("a b", budgetNow, acct("user:1", queue.Caps{}))},
		{"no lease", queue.Reservation{ID: "j", Accounts: []queue.AccountCaps{acct("user:1", queue.Caps{})}, Now: budgetNow}},
	} {
		if _, err := b.ReserveBudget(ctxT(t), tc.r); !errors.Is(err, queue.ErrBudgetInvalid) {
			t.Errorf("%s: err = %v, want ErrBudgetInvalid", tc.name, err)
		}
	}
	if _, err := b.SettleBudget(ctxT(t), "j", []string{"user:1"}, queue.Spend{Tokens: -1}, budgetNow); !errors.Is(err, queue.ErrBudgetInvalid) {
		t.Errorf("negative spend: err = %v", err)
	}
}
