// Package budget enforces odek's execution budgets: wall-clock runtime, tool
// calls, input and output tokens, and estimated cost in USD
// (EXTENSIONS.md "Budget exit behavior"), and, for a front end's own
// allowance (the bot's daily budget per chat), total tokens.
//
// The decisions are pure functions with table tests: MergeLimits (a project
// file may only lower the operator's limits), PriceTable.For (per-model
// price resolution) and Cost; the `limits` section itself is typed and merged by internal/config.
// A Tracker applies Limits to one run; the agent loop calls AddUsage after
// each LLM response, ReserveToolCalls before each tool batch, and wraps the
// whole run in the deadline from Deadline. Exhaustion is reported as an
// *ExceededError naming the limit, the observed value and the maximum;
// errors.Is(err, ErrExceeded) matches any of them.
//
// Boundary rule: counting limits (tool calls, tokens, cost) are exhausted
// only when the observed value goes past the maximum — reaching the cap
// exactly is allowed, one more is not. Runtime is a deadline: it is
// exhausted at the instant start+MaxRuntime, as a context deadline would be.
//
// Concurrency and ownership: a *Tracker is safe for concurrent use, and a
// nil *Tracker is an unlimited one (an agent.Budget holding a nil *Tracker
// must not panic the loop). Every
// other type is a plain value; functions do not retain their arguments.
// The package imports only the standard library and agent (whose Budget
// interface *Tracker implements, and which owns the error type).
package budget

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/odekrun/odek/agent"
)

// Limit names, as carried by ExceededError.Limit and the budget_exceeded
// event's limit_name.
const (
	LimitRuntime      = "runtime"
	LimitToolCalls    = "tool_calls"
	LimitInputTokens  = "input_tokens"
	LimitOutputTokens = "output_tokens"
	LimitTotalTokens  = "total_tokens"
	LimitCostUSD      = "cost_usd"
)

// ErrExceeded matches every *ExceededError through errors.Is (it is
// agent.ErrBudgetExceeded).
var ErrExceeded = agent.ErrBudgetExceeded

// ExceededError reports an exhausted limit (it is
// agent.BudgetExceededError). Units: seconds for runtime, counts for tool
// calls and tokens, USD for cost; Limit is one of the Limit* names.
type ExceededError = agent.BudgetExceededError

// Limits are the execution budgets of one run. The zero value means no
// limits; each zero field means that limit is unlimited.
type Limits struct {
	// MaxRuntime bounds wall-clock time from the start of the run,
	// LLM calls and tools included. Zero: unlimited.
	MaxRuntime time.Duration
	// MaxToolCalls bounds the number of tool calls executed. Zero: unlimited.
	MaxToolCalls int
	// MaxInputTokens bounds the sum of prompt tokens over all LLM calls.
	// Zero: unlimited.
	MaxInputTokens int
	// MaxOutputTokens bounds the sum of completion tokens. Zero: unlimited.
	MaxOutputTokens int
	// MaxTotalTokens bounds prompt and completion tokens together (a
	// front end's allowance: what is left of a chat's daily budget).
	// Zero: unlimited.
	MaxTotalTokens int
	// MaxCostUSD bounds the estimated cost in US dollars. Zero: unlimited.
	// It is only enforced when a price is known (see Tracker.CostCapInactive).
	MaxCostUSD float64
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// Prices are per-million-token prices in USD. A nil field is an unknown
// price.
type Prices struct {
	InputPerMillionUSD  *float64
	OutputPerMillionUSD *float64
	// CachedInputPerMillionUSD is the price of input tokens served from
	// the provider's prompt cache; nil ⇒ the input price (no discount
	// assumed).
	CachedInputPerMillionUSD *float64
}

// Known reports whether at least one price is set.
func (p Prices) Known() bool { return p.InputPerMillionUSD != nil || p.OutputPerMillionUSD != nil }

// PriceTable holds the operator's prices: a flat pair and per-model
// overrides keyed by exact model id. The zero value knows no prices.
type PriceTable struct {
	Flat   Prices
	Models map[string]Prices
	// CachedShare is the cached-input price as a share of the input price,
	// used when no cached price is configured for the model (the
	// provider's documented discount: a preset's CachedInputShare). 0 ⇒ 1,
	// the full input price.
	CachedShare float64
}

// For resolves the prices of model: an exact key in Models overrides the
// flat pair, each missing price of the entry falling back to the flat one
// individually; models without an entry use the flat pair. A cached price
// still missing is the input price times CachedShare (when both are
// known and 0 < CachedShare < 1). known reports whether at least one price
// resolved; Cost counts a missing price as zero, so with one price known
// the estimate is a lower bound.
func (t PriceTable) For(model string) (p Prices, known bool) {
	p = t.Flat
	if m, ok := t.Models[model]; ok {
		if m.InputPerMillionUSD != nil {
			p.InputPerMillionUSD = m.InputPerMillionUSD
		}
		if m.OutputPerMillionUSD != nil {
			p.OutputPerMillionUSD = m.OutputPerMillionUSD
		}
		if m.CachedInputPerMillionUSD != nil {
			p.CachedInputPerMillionUSD = m.CachedInputPerMillionUSD
		}
	}
	if p.CachedInputPerMillionUSD == nil && p.InputPerMillionUSD != nil && t.CachedShare > 0 && t.CachedShare < 1 {
		c := *p.InputPerMillionUSD * t.CachedShare
		p.CachedInputPerMillionUSD = &c
	}
	return p, p.Known()
}

// Cost is the estimated cost in USD of inTok input and outTok output tokens
// at prices p, none of the input cached. Unknown prices and negative token
// counts count as zero.
func Cost(p Prices, inTok, outTok int) float64 { return CostCached(p, inTok, 0, outTok) }

// CostCached is the estimated cost in USD of inTok input tokens, cached of
// them served from the prompt cache, and outTok output tokens: the
// uncached input at the input price, the cached input at the cached price
// (the input price when that is unknown), the output at the output price.
// cached is clamped to [0, inTok]; unknown prices and negative counts
// count as zero.
func CostCached(p Prices, inTok, cached, outTok int) float64 {
	inTok = max(inTok, 0)
	cached = min(max(cached, 0), inTok)
	var c float64
	if p.InputPerMillionUSD != nil {
		c += float64(inTok-cached) * *p.InputPerMillionUSD / 1e6
		cp := p.InputPerMillionUSD
		if p.CachedInputPerMillionUSD != nil {
			cp = p.CachedInputPerMillionUSD
		}
		c += float64(cached) * *cp / 1e6
	} else if p.CachedInputPerMillionUSD != nil {
		c += float64(cached) * *p.CachedInputPerMillionUSD / 1e6
	}
	if p.OutputPerMillionUSD != nil && outTok > 0 {
		c += float64(outTok) * *p.OutputPerMillionUSD / 1e6
	}
	return c
}

// Usage is what a run has consumed so far.
type Usage struct {
	InputTokens  int
	OutputTokens int
	// CachedInputTokens is the part of InputTokens the provider's prompt
	// cache served.
	CachedInputTokens int
	ToolCalls         int
	// CostUSD is the estimated cost; zero when no price is known.
	CostUSD float64
}

// Tracker accounts one run's usage against its Limits. It is safe for
// concurrent use.
type Tracker struct {
	limits      Limits
	prices      Prices
	pricesKnown bool
	start       time.Time

	mu    sync.Mutex
	usage Usage
}

// NewTracker starts accounting at start. prices and pricesKnown usually come
// from PriceTable.For for the run's model; with pricesKnown false no cost is
// estimated and a cost cap is inactive.
func NewTracker(l Limits, prices Prices, pricesKnown bool, start time.Time) *Tracker {
	return &Tracker{limits: l, prices: prices, pricesKnown: pricesKnown, start: start}
}

// Limits returns the limits the tracker enforces.
func (t *Tracker) Limits() Limits {
	if t == nil {
		return Limits{}
	}
	return t.limits
}

// CostCapInactive reports whether a cost cap is configured but cannot be
// enforced because no price is known; callers must say so (on stderr), never
// silently ignore the cap.
func (t *Tracker) CostCapInactive() bool {
	return t != nil && t.limits.MaxCostUSD > 0 && !t.pricesKnown
}

// AddUsage records the usage of one LLM response (negative counts count as
// zero) and then checks, in order, input tokens, output tokens and cost. The
// usage is recorded even when a limit is exhausted, so Snapshot shows what was
// spent. It returns the first exhausted limit as an *ExceededError.
func (t *Tracker) AddUsage(in, out int) error { return t.AddUsageCached(in, 0, out) }

// AddUsageCached is AddUsage for a response of which cached input tokens
// were served from the prompt cache (agent.CachedBudget): they count
// against the input-token limit like any input and are priced at the
// cached-input price.
func (t *Tracker) AddUsageCached(in, cached, out int) error {
	if t == nil {
		return nil
	}
	in, out = max(in, 0), max(out, 0)
	cached = min(max(cached, 0), in)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.usage.InputTokens = satAdd(t.usage.InputTokens, in)
	t.usage.CachedInputTokens = satAdd(t.usage.CachedInputTokens, cached)
	t.usage.OutputTokens = satAdd(t.usage.OutputTokens, out)
	if t.pricesKnown {
		t.usage.CostUSD += CostCached(t.prices, in, cached, out)
	}
	return checkUsage(t.limits, t.usage, t.pricesKnown)
}

// checkUsage is the token and cost decision: a limit is exhausted when the
// observed value is past a non-zero maximum.
func checkUsage(l Limits, u Usage, pricesKnown bool) error {
	if l.MaxInputTokens > 0 && u.InputTokens > l.MaxInputTokens {
		return &ExceededError{Limit: LimitInputTokens, Observed: float64(u.InputTokens), Max: float64(l.MaxInputTokens)}
	}
	if l.MaxOutputTokens > 0 && u.OutputTokens > l.MaxOutputTokens {
		return &ExceededError{Limit: LimitOutputTokens, Observed: float64(u.OutputTokens), Max: float64(l.MaxOutputTokens)}
	}
	if total := satAdd(u.InputTokens, u.OutputTokens); l.MaxTotalTokens > 0 && total > l.MaxTotalTokens {
		return &ExceededError{Limit: LimitTotalTokens, Observed: float64(total), Max: float64(l.MaxTotalTokens)}
	}
	if pricesKnown && l.MaxCostUSD > 0 && u.CostUSD > l.MaxCostUSD {
		return &ExceededError{Limit: LimitCostUSD, Observed: u.CostUSD, Max: l.MaxCostUSD}
	}
	return nil
}

// ReserveToolCalls asks for n tool calls (one batch). It returns how many of
// them may run — the first allowed calls of the batch, in order — and
// counts them as used. When some calls are over the cap it also returns an
// *ExceededError whose Observed is the total the run asked for; the caller
// gives the remaining n-allowed calls an error result.
func (t *Tracker) ReserveToolCalls(n int) (allowed int, err error) {
	if n <= 0 {
		return 0, nil
	}
	if t == nil {
		return n, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	allowed, err = reserve(t.limits.MaxToolCalls, t.usage.ToolCalls, n)
	t.usage.ToolCalls += allowed
	return allowed, err
}

// reserve is the tool-call decision: with used calls spent out of maxCalls
// (zero: unlimited), how many of n more may run.
func reserve(maxCalls, used, n int) (int, error) {
	if maxCalls <= 0 {
		return n, nil
	}
	remaining := max(maxCalls-used, 0)
	if n <= remaining {
		return n, nil
	}
	return remaining, &ExceededError{Limit: LimitToolCalls, Observed: float64(used) + float64(n), Max: float64(maxCalls)}
}

// CheckRuntime reports an *ExceededError when now is at or past the deadline.
func (t *Tracker) CheckRuntime(now time.Time) error {
	if t == nil || t.limits.MaxRuntime <= 0 {
		return nil
	}
	elapsed := now.Sub(t.start)
	if elapsed < t.limits.MaxRuntime {
		return nil
	}
	return &ExceededError{Limit: LimitRuntime, Observed: elapsed.Seconds(), Max: t.limits.MaxRuntime.Seconds()}
}

// Deadline is start+MaxRuntime; ok is false when runtime is unlimited. Use it
// with context.WithDeadline around the whole run, and CheckRuntime to turn an
// expired context into the typed error.
func (t *Tracker) Deadline() (deadline time.Time, ok bool) {
	if t == nil || t.limits.MaxRuntime <= 0 {
		return time.Time{}, false
	}
	return t.start.Add(t.limits.MaxRuntime), true
}

// Levels reports each configured limit with its use so far, in the units
// of ExceededError (agent.BudgetMeter: the loop warns at 80%). Runtime is
// measured against the wall clock now; cost only when a price is known.
func (t *Tracker) Levels(yield func(limit string, observed, max float64)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	l, u := t.limits, t.usage
	t.mu.Unlock()
	if l.MaxRuntime > 0 {
		yield(LimitRuntime, time.Since(t.start).Seconds(), l.MaxRuntime.Seconds())
	}
	if l.MaxToolCalls > 0 {
		yield(LimitToolCalls, float64(u.ToolCalls), float64(l.MaxToolCalls))
	}
	if l.MaxInputTokens > 0 {
		yield(LimitInputTokens, float64(u.InputTokens), float64(l.MaxInputTokens))
	}
	if l.MaxOutputTokens > 0 {
		yield(LimitOutputTokens, float64(u.OutputTokens), float64(l.MaxOutputTokens))
	}
	if l.MaxTotalTokens > 0 {
		yield(LimitTotalTokens, float64(satAdd(u.InputTokens, u.OutputTokens)), float64(l.MaxTotalTokens))
	}
	if t.pricesKnown && l.MaxCostUSD > 0 {
		yield(LimitCostUSD, u.CostUSD, l.MaxCostUSD)
	}
}

// Snapshot returns the usage so far.
func (t *Tracker) Snapshot() Usage {
	if t == nil {
		return Usage{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.usage
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// MergeLimits combines the operator's limits with a project file's. A project
// value may lower an operator limit; a higher one is clamped to the
// operator's with a warning; a limit the operator leaves unlimited may be set
// by the project. Zero in the project keeps the operator's value.
func MergeLimits(operator, project Limits) (Limits, []string) {
	var warns []string
	out := operator
	out.MaxRuntime = mergeOne(&warns, "max_runtime_seconds", operator.MaxRuntime, project.MaxRuntime, func(d time.Duration) string { return fmt.Sprintf("%g", d.Seconds()) })
	out.MaxToolCalls = mergeOne(&warns, "max_tool_calls", operator.MaxToolCalls, project.MaxToolCalls, itoa)
	out.MaxInputTokens = mergeOne(&warns, "max_input_tokens", operator.MaxInputTokens, project.MaxInputTokens, itoa)
	out.MaxOutputTokens = mergeOne(&warns, "max_output_tokens", operator.MaxOutputTokens, project.MaxOutputTokens, itoa)
	out.MaxTotalTokens = mergeOne(&warns, "max_total_tokens", operator.MaxTotalTokens, project.MaxTotalTokens, itoa)
	out.MaxCostUSD = mergeOne(&warns, "max_cost_usd", operator.MaxCostUSD, project.MaxCostUSD, func(f float64) string { return fmt.Sprintf("%g", f) })
	return out, warns
}

func itoa(i int) string { return fmt.Sprintf("%d", i) }

func mergeOne[T int | float64 | time.Duration](warns *[]string, key string, op, proj T, show func(T) string) T {
	switch {
	case proj <= 0:
		return op
	case op <= 0 || proj <= op:
		return proj
	default:
		*warns = append(*warns, fmt.Sprintf("limits.%s: project value %s is above the operator limit %s; clamped to %s",
			key, show(proj), show(op), show(op)))
		return op
	}
}
