package queue

import (
	"fmt"
	"math"
)

// Budget is a job's own execution limits, set by the front end (the bot's
// per-job timeout, `odek queue submit --budget`). Each non-zero field may
// only lower the worker's configured limit of the same name (the limits
// section of its config); zero means "the worker's limit". The JSON names
// are those of the limits section.
type Budget struct {
	// MaxRuntimeSeconds bounds the job's wall-clock runtime, in seconds.
	MaxRuntimeSeconds float64 `json:"max_runtime_seconds,omitempty"`
	// MaxToolCalls bounds its tool calls.
	MaxToolCalls int `json:"max_tool_calls,omitempty"`
	// MaxInputTokens and MaxOutputTokens bound its prompt and completion
	// tokens, summed over model calls.
	MaxInputTokens  int `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// MaxTotalTokens bounds prompt and completion tokens together: the
	// bot sends what is left of the chat's daily token budget, so a job
	// stops at it (a budget outcome) instead of overrunning the day.
	MaxTotalTokens int `json:"max_total_tokens,omitempty"`
	// MaxCostUSD bounds its estimated cost, in US dollars.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// CappedBy says whose budget set MaxTotalTokens and MaxCostUSD, so
	// that whichever front end delivers the result (any bot replica) can
	// say whose budget a budget stop used up: CappedByUser (the sender's
	// own caps or the guest pool), CappedByChat (the chat's daily budget
	// or the operator's per-job share), "" when the enqueuer did not say
	// (a job from before this field, a fire whose share any account may
	// have set). The queue copies it into the job's Result.
	CappedBy string `json:"capped_by,omitempty"`
}

// Values of Budget.CappedBy and Result.CappedBy.
const (
	CappedByUser = "user"
	CappedByChat = "chat"
)

// maxBudgetRuntime keeps MaxRuntimeSeconds within time.Duration.
const maxBudgetRuntime = 100 * 365 * 24 * 3600

// Validate reports the first field that is negative, not a finite number
// or (runtime) longer than 100 years, naming it.
func (b *Budget) Validate() error {
	if b == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"max_runtime_seconds", b.MaxRuntimeSeconds}, {"max_tool_calls", float64(b.MaxToolCalls)},
		{"max_input_tokens", float64(b.MaxInputTokens)}, {"max_output_tokens", float64(b.MaxOutputTokens)},
		{"max_total_tokens", float64(b.MaxTotalTokens)},
		{"max_cost_usd", b.MaxCostUSD},
	} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%w: budget.%s is %v: want a number >= 0", ErrInvalidJob, f.name, f.v)
		}
	}
	if b.CappedBy != "" && b.CappedBy != CappedByUser && b.CappedBy != CappedByChat {
		return fmt.Errorf("%w: budget.capped_by is %q: want %q, %q or empty", ErrInvalidJob, b.CappedBy, CappedByUser, CappedByChat)
	}
	if b.MaxRuntimeSeconds > maxBudgetRuntime {
		return fmt.Errorf("%w: budget.max_runtime_seconds is %v: at most %d", ErrInvalidJob, b.MaxRuntimeSeconds, maxBudgetRuntime)
	}
	return nil
}
