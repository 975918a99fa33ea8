package agent

import (
	"errors"
	"fmt"
	"time"
)

// Budget enforces a run's execution limits. The loop calls it from its
// own goroutine and from tools (through CallInfo.Budget), so
// implementations must be safe for concurrent use. Exhaustion is reported
// as an error wrapping ErrBudgetExceeded, best a *BudgetExceededError,
// which the loop reports in the budget_exceeded event. odek's own tracker
// (limits from config and flags, cost from model prices) implements it.
type Budget interface {
	// Deadline is the end of the runtime limit; ok is false without one.
	Deadline() (deadline time.Time, ok bool)
	// CheckRuntime returns the runtime error once now is past Deadline.
	CheckRuntime(now time.Time) error
	// AddUsage counts the tokens of one model response and returns an
	// error when a token or cost limit is now exhausted.
	AddUsage(inputTokens, outputTokens int) error
	// ReserveToolCalls asks for n calls and returns how many may run; err
	// is set when fewer than n may.
	ReserveToolCalls(n int) (allowed int, err error)
}

// CachedBudget is what a Budget may also implement to price input served
// from the provider's prompt cache apart: the loop then calls
// AddUsageCached (with the response's Usage.CachedTokens) instead of
// AddUsage. odek's tracker implements it.
type CachedBudget interface {
	AddUsageCached(inputTokens, cachedTokens, outputTokens int) error
}

// BudgetMeter is what a Budget may also implement so the loop can warn
// before a limit is hit: Levels calls yield for every configured limit
// with what is used and the maximum (same units as BudgetExceededError).
// The loop sends one SignalBudgetWarning per limit the first time its use
// reaches BudgetWarnShare of the maximum.
type BudgetMeter interface {
	Levels(yield func(limit string, observed, max float64))
}

// BudgetWarnShare is the share of a limit whose use raises
// SignalBudgetWarning.
const BudgetWarnShare = 0.8

// ErrBudgetExceeded matches every *BudgetExceededError through errors.Is.
var ErrBudgetExceeded = errors.New("budget: execution budget exhausted")

// BudgetExceededError reports an exhausted limit. Units: seconds for
// runtime, counts for tool calls and tokens, USD for cost.
type BudgetExceededError struct {
	// Limit names the limit: runtime, tool_calls, input_tokens,
	// output_tokens, total_tokens or cost_usd (the budget_exceeded event's
	// limit_name).
	Limit string
	// Observed is the value that went past Max (for tool calls, the number
	// of calls the run asked for in total).
	Observed float64
	// Max is the configured maximum.
	Max float64
}

func (e *BudgetExceededError) Error() string {
	return fmt.Sprintf("budget: %s limit exhausted: observed %s, max %s",
		e.Limit, formatLimitValue(e.Limit, e.Observed), formatLimitValue(e.Limit, e.Max))
}

// Is makes errors.Is(err, ErrBudgetExceeded) true for any
// *BudgetExceededError.
func (e *BudgetExceededError) Is(target error) bool { return target == ErrBudgetExceeded }

func formatLimitValue(limit string, v float64) string {
	switch limit {
	case "runtime":
		return fmt.Sprintf("%gs", v)
	case "cost_usd":
		return fmt.Sprintf("$%.6f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
