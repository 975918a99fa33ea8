package subagent

import (
	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/artifacts"
)

// Result statuses.
const (
	StatusSuccess         = string(agent.StatusSuccess)
	StatusPartial         = "partial"
	StatusBudgetExhausted = string(agent.StatusBudgetExhausted)
	StatusError           = string(agent.StatusError)
)

// Exit codes of `odek subagent` (EXTENSIONS.md "Budget exit behavior"):
// agent's.
const (
	ExitOK      = agent.ExitOK
	ExitError   = agent.ExitError
	ExitTimeout = agent.ExitTimeout
	ExitSetup   = agent.ExitSetup
	ExitBudget  = agent.ExitBudget
)

// MaxResultBytes bounds the child's JSON result the parent reads.
const MaxResultBytes = 4 << 20

// Result is the one JSON object `odek subagent` prints on stdout. Fields
// may be added; readers ignore unknown ones.
type Result struct {
	// Status is one of the Status* constants.
	Status string `json:"status"`
	// Summary is the child's final (or partial) answer.
	Summary string `json:"summary"`
	// Error says why the run did not succeed; "" on success.
	Error string `json:"error,omitempty"`
	// TimedOut reports that the task's own timeout ended the run (exit 2).
	TimedOut bool `json:"timed_out,omitempty"`
	// Iterations is the number of model calls.
	Iterations int `json:"iterations"`
	// DurationSeconds is the run's wall clock.
	DurationSeconds float64 `json:"duration_seconds"`
	// TokensUsed is input plus output tokens.
	TokensUsed int `json:"tokens_used"`
	// InputTokens, OutputTokens and ToolCalls detail the usage the parent
	// adds to its own budget.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	ToolCalls    int `json:"tool_calls"`
	// Artifacts are the refs of the files moved into the artifact root.
	Artifacts []artifacts.RefSpec `json:"artifacts"`
	// Denials lists every tool call the policy refused.
	Denials []Denial `json:"denials"`

	// fromChild marks a result decoded from a child's stdout (as opposed
	// to one the parent made up for a child it had to kill).
	fromChild bool
}

// Denial is one refused tool call.
type Denial struct {
	Tool   string `json:"tool"`
	Class  string `json:"class"`
	Reason string `json:"reason"`
}

// ExitCode maps a result to the process exit code. Pure.
func (r *Result) ExitCode() int {
	if r.TimedOut {
		return ExitTimeout
	}
	return agent.Status(r.Status).ExitCode()
}
