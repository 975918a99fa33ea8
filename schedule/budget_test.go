package schedule

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// budgetEnv is a runner on a Memory queue (which keeps budgets) with a
// stored policy: the chat's daily budget of 1,000 tokens and user 7's
// daily cap of 600.
func budgetEnv(t *testing.T) (*Runner, *File, *queue.Memory, *clock, Schedule) {
	t.Helper()
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 12, 3, 9, 59, 30, 0, time.UTC)}
	q := queue.NewMemory(queue.Options{Now: clk.Now})
	if err := q.PutBudgetPolicy(ctx, queue.BudgetPolicy{ChatDayTokens: 1000, User: queue.Caps{DayTokens: 600}}); err != nil {
		t.Fatal(err)
	}
	st := NewFile("")
	s, _, err := Prepare(Schedule{ChatID: 42, UserID: 7, Spec: "every 1m", Text: "summarise", Missed: MissedSkip}, Limits{}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Store: st, Queue: q, Name: "r1", Now: clk.Now}
	return r, st, q, clk, s
}

func jobsOf(t *testing.T, q *queue.Memory) []queue.Job {
	t.Helper()
	var out []queue.Job
	for {
		ls, err := q.Claim(context.Background(), "w", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			return out
		}
		for _, l := range ls {
			out = append(out, l.Job)
			if err := q.Ack(context.Background(), l, queue.Result{Status: queue.StatusSucceeded}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A granted fire's job carries its share as its cap: the least any of
// its accounts has left (the user's 600 here).
func TestFireCarriesItsBudgetShare(t *testing.T) {
	r, _, q, clk, _ := budgetEnv(t)
	clk.Add(61 * time.Second)
	if n, err := r.Tick(context.Background()); err != nil || n != 1 {
		t.Fatalf("Tick = %d, %v", n, err)
	}
	jobs := jobsOf(t, q)
	if len(jobs) != 1 || jobs[0].Budget == nil || jobs[0].Budget.MaxTotalTokens != 600 {
		t.Fatalf("jobs = %+v, want one with max_total_tokens 600", jobs)
	}
	u, _ := q.BudgetUsage(context.Background(), "user:7", clk.Now())
	if u.ReservedTokens != 600 {
		t.Fatalf("user:7 holds %d, want the fire's 600", u.ReservedTokens)
	}
}

// A fire whose owner's budget is spent does not run: it is recorded with
// StatusBudget and the reason, and the chat is told once, however many
// fires are refused after it. Without the check the fire would run.
func TestFireRefusedByBudgetIsRecordedAndToldOnce(t *testing.T) {
	r, st, q, clk, s := budgetEnv(t)
	ctx := context.Background()
	if _, err := q.SettleBudget(ctx, "earlier", []string{queue.ChatAccount(42)}, queue.Spend{Tokens: 1000}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		clk.Add(time.Minute)
		if n, err := r.Tick(ctx); err != nil || n != 0 {
			t.Fatalf("tick %d: fired %d, %v; want nothing fired", i, n, err)
		}
	}
	got, err := st.Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastStatus != StatusBudget || !strings.Contains(got.LastError, "chat:42 day_tokens spent (1000 tokens of 1000 tokens); resets 2026-12-04 00:00 UTC") {
		t.Fatalf("schedule = status %q, error %q", got.LastStatus, got.LastError)
	}
	if r.Stats().Budget.Load() != 3 {
		t.Fatalf("budget refusals = %d, want 3", r.Stats().Budget.Load())
	}
	jobs := jobsOf(t, q)
	if len(jobs) != 1 || !strings.Contains(jobs[0].Goal, "did not run: this chat's daily budget of 1000 tokens is used up") {
		t.Fatalf("jobs = %+v, want the one notice", jobs)
	}
	if fi, ok := ParseFireKey(jobs[0].IdempotencyKey); !ok || !fi.Message {
		t.Fatalf("the notice's key %q is not a message fire (the worker would call the model)", jobs[0].IdempotencyKey)
	}
}

// A fire that finds the rest of the budget held by a running job waits
// (stays due) and runs once that job is settled.
func TestFireWaitsWhileTheBudgetIsHeld(t *testing.T) {
	r, st, q, clk, s := budgetEnv(t)
	ctx := context.Background()
	if g, err := q.ReserveBudget(ctx, queue.Reservation{ID: "typed", Accounts: []queue.AccountCaps{{Account: "user:7", Caps: queue.Caps{DayTokens: 600}}}, Lease: time.Hour, Now: clk.Now()}); err != nil || g.Tokens != 600 {
		t.Fatalf("grant = %+v, %v", g, err)
	}
	clk.Add(61 * time.Second)
	if n, _ := r.Tick(ctx); n != 0 {
		t.Fatalf("fired %d while the budget was held", n)
	}
	if got, _ := st.Get(ctx, s.ID); !got.Next.Equal(s.Next) {
		t.Fatalf("next moved to %v: the held fire was claimed", got.Next)
	}
	if _, err := q.SettleBudget(ctx, "typed", nil, queue.Spend{Tokens: 100}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("after the settle: fired %d, %v", n, err)
	}
	if jobs := jobsOf(t, q); len(jobs) != 1 || jobs[0].Budget.MaxTotalTokens != 500 {
		t.Fatalf("jobs = %+v, want one capped at the 500 left", jobs)
	}
}

// German owners are told in German.
func TestBudgetNoticeInGerman(t *testing.T) {
	g := queue.Grant{Verdict: queue.GrantSpent, Account: "user:7", Limit: queue.LimitMonthUSD, Max: 5, ResetAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	got := budgetNotice(Schedule{ID: "abc", Lang: "de"}, g, time.Now())
	if !strings.Contains(got, "dein Budget (monatlich, $5.00) ist verbraucht. Es wird am 2027-01-01 00:00 UTC zurückgesetzt") {
		t.Fatalf("notice = %q", got)
	}
}
