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
