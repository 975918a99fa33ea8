package chatcore

import (
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// The chat's books as a state machine, driven through the regression of
// the daily budget: with a budget and no per-job cap, the first job
// reserves the rest of the day; a message sent while it runs is held (it
// was refused); when the job's result settles, the held request starts
// with what the day has left.
func TestBooksHoldThenStartWithWhatIsLeft(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{DailyTokenBudget: 200000}
	var b Books
	type step struct {
		name string
		do   func() Admission
		want Admission
	}
	for _, s := range []step{
		{"first message: the whole day", func() Admission {
			a := b.Request(p, 0, "en", now)
			b.Started("j1", a)
			return a
		}, Admission{Verdict: BudgetOK, Cap: 200000, Reserve: 200000}},
		{"second message while j1 runs: held", func() Admission { return b.Request(p, 0, "en", now) }, Admission{Verdict: BudgetHeld}},
		{"a third waits behind the held one", func() Admission { return b.Request(p, 1, "en", now) }, Admission{Verdict: BudgetHeld}},
		{"the held one may not start before j1 ends", func() Admission { return b.Next(p, "en", now) }, Admission{Verdict: BudgetHeld}},
		{"j1 settles at 30,000 tokens: the held one starts with the rest", func() Admission {
			b.Settled("j1", PlanResult(p, resultOf(30000), Finished{Lang: "en"}, b.Use, 0, now))
			a := b.Next(p, "en", now)
			b.Started("j2", a)
			return a
		}, Admission{Verdict: BudgetOK, Cap: 170000, Reserve: 170000}},
		{"j2 forgotten: its reservation goes, nothing counted", func() Admission {
			b.Ended("j2")
			return b.Next(p, "en", now)
		}, Admission{Verdict: BudgetOK, Cap: 170000, Reserve: 170000}},
		{"the day spent: refused", func() Admission {
			b.Spend(170000, now)
			return b.Next(p, "en", now)
		}, Admission{Verdict: BudgetSpent, Refusal: "🚫 This chat has used its daily budget of 200,000 tokens. It resets at 00:00 UTC (in 12 h 0 min)."}},
		{"the next day: the whole day again, yesterday in the history", func() Admission {
			return b.Request(p, 0, "en", now.Add(24*time.Hour))
		}, Admission{Verdict: BudgetOK, Cap: 200000, Reserve: 200000}},
	} {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: %+v, want %+v", s.name, got, s.want)
		}
	}
	if len(b.Hist) != 1 || b.Hist[0].Day != "2026-03-01" || b.Hist[0].Tokens != 200000 || b.Empty(now.Add(24*time.Hour)) {
		t.Errorf("history %+v", b.Hist)
	}
}

func TestBooksPerJobCapLetsTheNextStart(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{DailyTokenBudget: 1000, JobMaxTokens: 300}
	var b Books
	var caps []int
	for i, job := range []string{"j1", "j2", "j3", "j4"} {
		a := b.Request(p, 0, "en", now)
		if a.Verdict != BudgetOK {
			if i != 3 {
				t.Fatalf("%s: %+v", job, a)
			}
			continue
		}
		b.Started(job, a)
		caps = append(caps, a.Cap)
	}
	if len(caps) != 4 || caps[0] != 300 || caps[1] != 300 || caps[2] != 300 || caps[3] != 100 {
		t.Errorf("caps %v, want [300 300 300 100]", caps)
	}
	if a := b.Request(p, 0, "en", now); a.Verdict != BudgetHeld {
		t.Errorf("a fifth: %+v", a)
	}
}

func resultOf(tokens int64) queue.Result {
	return queue.Result{Status: queue.StatusSucceeded, Usage: queue.Usage{PromptTokens: tokens}}
}

// Whatever the order of messages, results and forgotten jobs, the books
// never let the chat's unfinished jobs reserve more than the day has
// left, never start a job while the day is spent, and count every
// settled result once.
func FuzzBooks(f *testing.F) {
	f.Add(int64(1000), int64(0), []byte{0, 0, 1, 0, 2, 0, 0})
	f.Add(int64(200000), int64(0), []byte{0, 0, 0, 1, 1, 3, 0, 0})
	f.Add(int64(1000), int64(300), []byte{0, 0, 0, 0, 0, 1, 2, 1, 0})
	f.Fuzz(func(t *testing.T, budget, perJob int64, ops []byte) {
		if budget < 0 || budget > 1e9 || perJob < 0 || perJob > 1e9 || len(ops) > 200 {
			return
		}
		p := Policy{DailyTokenBudget: budget, JobMaxTokens: int(perJob)}
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var b Books
		var running []string
		var counted int64
		for i, op := range ops {
			switch op % 4 {
			case 0: // a message
				var held int64
				for _, r := range b.Reserved {
					held += r
				}
				used := b.Use.Tokens
				a := b.Request(p, 0, "en", now)
				switch {
				case budget > 0 && used >= budget:
					if a.Verdict != BudgetSpent || a.Refusal == "" {
						t.Fatalf("op %d: spent day gave %+v", i, a)
					}
				case budget > 0 && used+held >= budget:
					if a.Verdict != BudgetHeld {
						t.Fatalf("op %d: the rest held, gave %+v", i, a)
					}
				case a.Verdict != BudgetOK:
					t.Fatalf("op %d: room left, gave %+v", i, a)
				case budget > 0 && (a.Cap <= 0 || int64(a.Cap) > budget-used-held || a.Reserve != int64(a.Cap)):
					t.Fatalf("op %d: cap %d, reserve %d with %d left", i, a.Cap, a.Reserve, budget-used-held)
				case perJob > 0 && int64(a.Cap) > perJob:
					t.Fatalf("op %d: cap %d over the per-job cap %d", i, a.Cap, perJob)
				}
				if a.Verdict == BudgetOK {
					id := string(rune('a' + i%26))
					b.Ended(id) // an id may come back
					b.Started(id, a)
					running = append(running, id)
				}
			case 1: // the oldest job's result
				if len(running) == 0 {
					continue
				}
				tokens := int64(op) * 7
				b.Settled(running[0], PlanResult(p, resultOf(tokens), Finished{Lang: "en"}, b.Use, 0, now))
				counted += tokens
				running = running[1:]
			case 2: // the oldest job forgotten
				if len(running) == 0 {
					continue
				}
				b.Ended(running[0])
				running = running[1:]
			case 3:
				b.Spend(int64(op), now)
				counted += int64(op)
			}
			if b.Use.Tokens != counted {
				t.Fatalf("op %d: books count %d tokens, %d were spent", i, b.Use.Tokens, counted)
			}
		}
	})
}

// A chat whose only record is yesterday's usage is not empty: pruning it
// would lose the day from /usage's history (it did, when the prune came
// before the chat's next message).
func TestBooksYesterdayIsNotEmpty(t *testing.T) {
	day1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b := Books{Use: Usage{Day: "2026-12-01", Tokens: 1500, Jobs: 1}}
	day2 := day1.Add(24 * time.Hour)
	if b.Empty(day2) {
		t.Fatal("yesterday's usage counts as empty")
	}
	b.Prune(day2)
	if b.Empty(day2) || len(b.Hist) != 1 || b.Hist[0].Tokens != 1500 || b.Use != (Usage{Day: "2026-12-02"}) {
		t.Fatalf("after the prune: %+v", b)
	}
	if b.Prune(day1.AddDate(0, 0, KeepDays+2)); !b.Empty(day1.AddDate(0, 0, KeepDays+2)) {
		t.Errorf("history past KeepDays kept: %+v", b)
	}
	if !(&Books{}).Empty(day2) || !(&Books{Use: Usage{Day: "2026-12-02"}}).Empty(day2) {
		t.Error("empty books not empty")
	}
}
