package chatcore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/odekrun/odek/bot/tgformat"
	"github.com/odekrun/odek/queue"
)

// Policy is what the operator set that a chat's decisions depend on.
// Zero values mean no limit.
type Policy struct {
	DailyTokenBudget int64         // tokens per chat per UTC day
	JobMaxTokens     int           // the operator's per-job total-token cap
	AgentTimeout     time.Duration // how long a job may run
	AdminCommands    []string      // commands only group admins may use (lower case)
}

// Incoming is one chat message as the core sees it: what the front end
// parsed out of its platform's update, nothing of the platform itself.
type Incoming struct {
	Command      string // the command without "/" and "@bot" ("" = not a command)
	OtherBot     bool   // the command names another bot (…@other_bot)
	Group        bool   // sent in a group
	Addressed    bool   // in a group: a mention, a reply to the bot or a keyword
	Unsupported  string // a kind of message the bot cannot take ("stickers", …; "" = none)
	Voice, File  bool   // it carries a voice/audio message or a file
	Text         string // the text or caption, mention stripped
	CallerAdmin  bool   // the sender administers the group (asked only for admin commands)
	AdminChecked bool   // CallerAdmin was asked
}

// Route is what the chat does with a message.
type Route int

// Routes, in the order a message is checked.
const (
	RouteIgnore      Route = iota // not for the bot: another bot's command, group chatter
	RouteNeedAdmin                // an admin command in a group: ask whether the sender administers it, then route again
	RouteAdminsOnly               // refused: the command is for group admins (reply "admins.only")
	RouteRetry                    // /retry
	RouteCommand                  // any other command
	RouteUnsupported              // a kind of message the bot cannot take (reply "unsupported")
	RouteMedia                    // a voice message or a file: check the limits, fetch it, then route its text as a job
	RouteTextOnly                 // nothing to work on (reply "text.only")
	RouteJob                      // a request: it becomes a job (or waits behind the chat's jobs)
)

// RouteOf decides what a message is, before anything is fetched or sent.
// Pure.
func RouteOf(in Incoming, p Policy) Route {
	switch {
	case in.Command != "" && in.OtherBot:
		return RouteIgnore
	case in.Command != "" && in.Group && slices.Contains(p.AdminCommands, strings.ToLower(in.Command)):
		if !in.AdminChecked {
			return RouteNeedAdmin
		}
		if !in.CallerAdmin {
			return RouteAdminsOnly
		}
	}
	switch {
	case in.Command == "retry":
		return RouteRetry
	case in.Command != "":
		return RouteCommand
	case in.Group && !in.Addressed:
		return RouteIgnore
	case in.Unsupported != "":
		return RouteUnsupported
	case in.Voice || in.File:
		return RouteMedia
	case strings.TrimSpace(in.Text) == "":
		return RouteTextOnly
	}
	return RouteJob
}

// Admission is what the daily budget says about a new request.
type Admission struct {
	Verdict Verdict
	// Cap is the job's total-token cap (0 = none): the operator's per-job
	// cap or what the day has left, the lower.
	Cap int
	// Reserve is what the job holds of the day while it is unfinished:
	// its cap when the chat has a budget, else 0.
	Reserve int64
	// Refusal is the text for the user when the day is spent ("" else).
	Refusal string
	// Set by the budget store's reservation (bot/budgets.go): the job's
	// id (the reservation's), its cost cap in USD (0 none), and whether
	// the user's (or guest pool's) budget made its cap lower than the
	// chat's day would.
	JobID      string
	USD        float64
	UserCapped bool
}

// CappedBy is what the job carries as queue.Budget.CappedBy, so that
// whichever front end delivers its result can say whose budget a budget
// stop used up: the user's when UserCapped, the chat's when the chat's
// books capped it, "" when nothing did.
func (a Admission) CappedBy() string {
	switch {
	case a.UserCapped:
		return queue.CappedByUser
	case a.Cap > 0 || a.USD > 0:
		return queue.CappedByChat
	}
	return ""
}

// Admit decides a new request's share of the chat's day: used is what
// the chat spent today, reserved what its unfinished jobs hold. A request
// that finds the rest of the day held (BudgetHeld) waits behind them;
// one that finds it spent is refused. Pure.
func Admit(p Policy, used, reserved int64, lang string, now time.Time) Admission {
	allowance, v := JobAllowance(p.DailyTokenBudget, used, reserved)
	a := Admission{Verdict: v, Cap: p.JobMaxTokens}
	switch v {
	case BudgetSpent:
		a.Cap, a.Refusal = 0, Tr(lang, "budget.spent", tgformat.Thousands(p.DailyTokenBudget), HumanWait(UntilMidnightUTC(now)))
		return a
	case BudgetHeld:
		a.Cap = 0
		return a
	}
	if allowance > 0 {
		if a.Cap == 0 || int64(a.Cap) > allowance {
			a.Cap = int(allowance)
		}
		a.Reserve = int64(a.Cap)
	}
	return a
}

// DayCapExhausted is in the error of a job stopped by its total-token cap
// (the agent's budget error for total_tokens), the cap Admit sets from the
// chat's day.
const DayCapExhausted = "budget: total_tokens limit exhausted"

// ResultText is the notice for a result that did not succeed ("" for a
// success). Pure.
func ResultText(lang string, res queue.Result, timedOut bool, timeout time.Duration) string {
	switch res.Status {
	case queue.StatusCanceled:
		if timedOut {
			return Tr(lang, "timed.out", HumanWait(timeout))
		}
		return Tr(lang, "stopped")
	case queue.StatusDeadLettered:
		return Tr(lang, "dead", res.Attempt, res.JobID)
	case queue.StatusFailed:
		msg := Tr(lang, "failed")
		if e := tgformat.OneLine(res.Error, 300); e != "" {
			msg += ": " + e
		}
		return msg + "."
	}
	return ""
}

// Finished is what the chat knows of a job whose result arrived.
type Finished struct {
	Lang       string
	TimedOut   bool // the bot canceled it over AgentTimeout
	Superseded bool // the user edited the message: its edit's job answers
	// Interrupted: a newer message stopped it (busy policy "interrupt").
	Interrupted bool
	Uploads     []string // artifact paths of the files the user sent with it
}

// PlannedArtifact is an artifact of a result with the id the chat gives it.
type PlannedArtifact struct {
	ID   string
	Meta queue.ArtifactMeta
}

// Plan is what the chat shows and records for one result.
type Plan struct {
	Show   bool   // send the reply (false: superseded by an edit)
	Head   string // the notice above the answer ("" for a success)
	Answer string
	// Artifacts are the result's files the chat did not send itself, with
	// their new ids; NextArt is the chat's artifact counter after them.
	Artifacts []PlannedArtifact
	NextArt   int
	// Use is the chat's usage of today once the result is settled; Warn,
	// when not "", goes out after the reply (80 % of the day reached).
	Use  Usage
	Warn string
}

// PlanResult decides the reply to a result and what it changes in the
// chat's books: use is today's usage before it, nextArt the chat's
// artifact counter. The front end sends what the plan says and records
// Use and NextArt once the reply is settled. Pure.
func PlanResult(p Policy, res queue.Result, f Finished, use Usage, nextArt int, now time.Time) Plan {
	// A quiet check-in with nothing to report (Result.Silent, decided by
	// the worker) shows nothing; its usage still counts.
	pl := Plan{Show: !f.Superseded && !res.Silent, Answer: res.Answer, NextArt: nextArt}
	pl.Use = use.Rollover(now)
	pl.Use.Tokens += res.Usage.PromptTokens + res.Usage.CompletionTokens
	pl.Use.Prompt += res.Usage.PromptTokens
	pl.Use.Cached += res.Usage.CachedTokens
	pl.Use.CostUSD += res.Usage.CostUSD
	pl.Use.Jobs++
	if ShouldWarn(pl.Use, p.DailyTokenBudget) {
		pl.Use.Warned = true
		pl.Warn = Tr(f.Lang, "budget.warn", pl.Use.Tokens*100/p.DailyTokenBudget, tgformat.Thousands(p.DailyTokenBudget), HumanWait(UntilMidnightUTC(now)))
	}
	for _, m := range res.Artifacts {
		if slices.Contains(f.Uploads, strings.TrimPrefix(m.Path, "/")) {
			continue // the user's own file, new to the worker: not an answer
		}
		pl.NextArt++
		pl.Artifacts = append(pl.Artifacts, PlannedArtifact{ID: fmt.Sprintf("a%d", pl.NextArt), Meta: m})
	}
	if res.Status == queue.StatusSucceeded {
		if strings.TrimSpace(res.Answer) == "" {
			pl.Answer = Tr(f.Lang, "no.answer")
		}
		return pl
	}
	pl.Head = ResultText(f.Lang, res, f.TimedOut, p.AgentTimeout)
	if res.Status == queue.StatusCanceled && f.Interrupted && !f.TimedOut {
		pl.Head = Tr(f.Lang, "busy.interrupted")
	}
	if res.Status == queue.StatusFailed && p.DailyTokenBudget > 0 && strings.Contains(res.Error, DayCapExhausted) {
		// The job reached its cap: what was left of the chat's day.
		pl.Head = Tr(f.Lang, "budget.stopped", tgformat.Thousands(p.DailyTokenBudget), HumanWait(UntilMidnightUTC(now)))
	}
	// Whose budget capped the job travels with it (queue.Budget.CappedBy),
	// so any replica words the stop the same.
	switch {
	case res.CappedBy == queue.CappedByUser && BudgetStopped(res):
		pl.Head = Tr(f.Lang, "bud.stopped") // the user's budget, not the chat's day, was the cap
	case res.CappedBy == "" && BudgetStopped(res):
		pl.Head = Tr(f.Lang, "bud.stopped.any") // a fire, or a job from before CappedBy: it does not say whose
	}
	return pl
}
