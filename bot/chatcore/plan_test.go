package chatcore

import (
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// Message in → what the chat does with it.
func TestRouteOf(t *testing.T) {
	p := Policy{AdminCommands: []string{"new", "model"}}
	for _, c := range []struct {
		name string
		in   Incoming
		want Route
	}{
		{"text", Incoming{Text: "hi"}, RouteJob},
		{"blank text", Incoming{Text: " \n"}, RouteTextOnly},
		{"command", Incoming{Command: "status"}, RouteCommand},
		{"retry", Incoming{Command: "retry"}, RouteRetry},
		{"another bot's command", Incoming{Command: "status", OtherBot: true, Group: true}, RouteIgnore},
		{"admin command in a private chat", Incoming{Command: "new"}, RouteCommand},
		{"admin command in a group, not asked yet", Incoming{Command: "New", Group: true}, RouteNeedAdmin},
		{"admin command by an admin", Incoming{Command: "new", Group: true, AdminChecked: true, CallerAdmin: true}, RouteCommand},
		{"admin command by a member", Incoming{Command: "model", Group: true, AdminChecked: true}, RouteAdminsOnly},
		{"group chatter", Incoming{Text: "lunch?", Group: true}, RouteIgnore},
		{"addressed in a group", Incoming{Text: "summarise", Group: true, Addressed: true}, RouteJob},
		{"command in a group needs no mention", Incoming{Command: "status", Group: true}, RouteCommand},
		{"sticker", Incoming{Unsupported: "stickers"}, RouteUnsupported},
		{"unaddressed sticker in a group", Incoming{Unsupported: "stickers", Group: true}, RouteIgnore},
		{"voice", Incoming{Voice: true}, RouteMedia},
		{"file without caption", Incoming{File: true}, RouteMedia},
	} {
		if got := RouteOf(c.in, p); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The daily budget's decision on a new request: its cap and what it
// reserves, a hold behind the chat's jobs, or a refusal.
func TestAdmit(t *testing.T) {
	now := time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name           string
		p              Policy
		used, reserved int64
		want           Admission
	}{
		{"no budget, no cap", Policy{}, 1e9, 0, Admission{Verdict: BudgetOK}},
		{"no budget, per-job cap", Policy{JobMaxTokens: 300}, 0, 0, Admission{Verdict: BudgetOK, Cap: 300}},
		{"the whole day", Policy{DailyTokenBudget: 1000}, 0, 0, Admission{Verdict: BudgetOK, Cap: 1000, Reserve: 1000}},
		{"what is left", Policy{DailyTokenBudget: 1000}, 250, 0, Admission{Verdict: BudgetOK, Cap: 750, Reserve: 750}},
		{"per-job cap below the rest", Policy{DailyTokenBudget: 1000, JobMaxTokens: 300}, 0, 300, Admission{Verdict: BudgetOK, Cap: 300, Reserve: 300}},
		{"per-job cap above the rest", Policy{DailyTokenBudget: 1000, JobMaxTokens: 300}, 0, 900, Admission{Verdict: BudgetOK, Cap: 100, Reserve: 100}},
		{"the rest held: wait", Policy{DailyTokenBudget: 200000}, 1000, 199000, Admission{Verdict: BudgetHeld}},
		{"spent", Policy{DailyTokenBudget: 1000}, 1000, 0, Admission{Verdict: BudgetSpent,
			Refusal: "🚫 This chat has used its daily budget of 1,000 tokens. It resets at 00:00 UTC (in 2 h 0 min)."}},
	} {
		if got := Admit(c.p, c.used, c.reserved, "en", now); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Result → reply plan: the notice, the answer, the artifacts with their
// new ids, the books after it and the 80 % warning.
func TestPlanResult(t *testing.T) {
	now := time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)
	today := Usage{Day: "2026-03-01", Tokens: 700, Prompt: 600, Jobs: 2}
	p := Policy{DailyTokenBudget: 1000, AgentTimeout: 15 * time.Minute}
	ok := queue.Result{Status: queue.StatusSucceeded, Answer: "done", Usage: queue.Usage{PromptTokens: 90, CompletionTokens: 10, CachedTokens: 40, CostUSD: 0.5},
		Artifacts: []queue.ArtifactMeta{{Path: "1001/uploads/in.csv"}, {Path: "1001/out.md", Name: "out.md"}}}
	for _, c := range []struct {
		name  string
		res   queue.Result
		f     Finished
		use   Usage
		check func(t *testing.T, pl Plan)
	}{
		{"success", ok, Finished{Lang: "en", Uploads: []string{"1001/uploads/in.csv"}}, today, func(t *testing.T, pl Plan) {
			if !pl.Show || pl.Head != "" || pl.Answer != "done" || len(pl.Artifacts) != 1 || pl.Artifacts[0].ID != "a5" || pl.NextArt != 5 {
				t.Errorf("plan %+v", pl)
			}
			if pl.Use != (Usage{Day: "2026-03-01", Tokens: 800, Prompt: 690, Cached: 40, CostUSD: 0.5, Jobs: 3, Warned: true}) || !strings.Contains(pl.Warn, "80 %") {
				t.Errorf("books %+v, warn %q", pl.Use, pl.Warn)
			}
		}},
		{"already warned", ok, Finished{Lang: "en"}, Usage{Day: "2026-03-01", Tokens: 850, Warned: true}, func(t *testing.T, pl Plan) {
			if pl.Warn != "" || len(pl.Artifacts) != 2 {
				t.Errorf("plan %+v", pl)
			}
		}},
		{"a new day", ok, Finished{Lang: "en"}, Usage{Day: "2026-02-28", Tokens: 999, Warned: true}, func(t *testing.T, pl Plan) {
			if pl.Use.Day != "2026-03-01" || pl.Use.Tokens != 100 || pl.Warn != "" {
				t.Errorf("books %+v", pl.Use)
			}
		}},
		{"empty answer", queue.Result{Status: queue.StatusSucceeded}, Finished{Lang: "de"}, today, func(t *testing.T, pl Plan) {
			if pl.Answer != Tr("de", "no.answer") {
				t.Errorf("answer %q", pl.Answer)
			}
		}},
		{"timed out", queue.Result{Status: queue.StatusCanceled, Answer: "partial"}, Finished{Lang: "en", TimedOut: true}, today, func(t *testing.T, pl Plan) {
			if !strings.Contains(pl.Head, "longer than the limit of 15 min") || pl.Answer != "partial" {
				t.Errorf("plan %+v", pl)
			}
		}},
		{"stopped at the day's cap", queue.Result{Status: queue.StatusFailed, Error: "run: " + DayCapExhausted, CappedBy: queue.CappedByChat}, Finished{Lang: "en"}, today, func(t *testing.T, pl Plan) {
			if !strings.HasPrefix(pl.Head, "🚫 The job stopped: it used what was left of this chat's daily budget of 1,000 tokens") {
				t.Errorf("head %q", pl.Head)
			}
		}},
		// Whose budget capped the job comes with the result (the job's
		// Budget.CappedBy), so the replica that delivers it need not be
		// the one that started it.
		{"stopped at the user's cap", queue.Result{Status: queue.StatusFailed, Error: "run: " + DayCapExhausted, CappedBy: queue.CappedByUser}, Finished{Lang: "en"}, today, func(t *testing.T, pl Plan) {
			if pl.Head != Tr("en", "bud.stopped") {
				t.Errorf("head %q", pl.Head)
			}
		}},
		{"stopped at a cap the job does not name", queue.Result{Status: queue.StatusFailed, Error: "budget: cost_usd limit exhausted: observed $0.51, max $0.50"}, Finished{Lang: "de"}, today, func(t *testing.T, pl Plan) {
			if pl.Head != Tr("de", "bud.stopped.any") {
				t.Errorf("head %q", pl.Head)
			}
		}},
		{"superseded by an edit", ok, Finished{Lang: "en", Superseded: true}, today, func(t *testing.T, pl Plan) {
			if pl.Show || pl.Use.Jobs != 3 {
				t.Errorf("plan %+v", pl)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, PlanResult(p, c.res, c.f, c.use, 4, now)) })
	}
}

func TestUsageText(t *testing.T) {
	now := time.Date(2026, 3, 10, 22, 0, 0, 0, time.UTC)
	u := Usage{Day: "2026-03-10", Tokens: 1500, Prompt: 1000, Cached: 250, CostUSD: 0.25, Jobs: 2}
	hist := []DayTotal{{Day: "2026-02-27", Tokens: 100, Jobs: 1}, {Day: "2026-03-08", Tokens: 500, Prompt: 400, Cached: 400, Jobs: 1}}
	want := "Today (UTC): 1,500 tokens of 10,000 (15 %), $0.2500, 250 input tokens from the prompt cache (25 %), 2 job(s). Resets in 2 h 0 min.\n" +
		"Last 7 days: 2,000 tokens, $0.2500, 650 input tokens from the prompt cache (46 %), 3 job(s)\n" +
		"March 2026: 2,000 tokens, $0.2500, 650 input tokens from the prompt cache (46 %), 3 job(s)\n" +
		"Earlier days:\n2026-03-08: 500 tokens, 400 input tokens from the prompt cache (100 %), 1 job(s)\n2026-02-27: 100 tokens, 1 job(s)"
	if got := UsageText("en", u, hist, 10000, now); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
