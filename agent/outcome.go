package agent

import (
	"context"
	"errors"
)

// Status is how a run ended, as `odek run --json`, `odek subagent` and
// the worker's results report it.
type Status string

// Statuses of a finished run.
const (
	StatusSuccess         Status = "success"
	StatusError           Status = "error"
	StatusBudgetExhausted Status = "budget_exhausted"
	StatusCanceled        Status = "canceled"
)

// Process exit codes (EXTENSIONS.md "Budget exit behavior"; 130 is the
// shell's code for SIGINT). Every odek command maps a run's end to them
// through OutcomeOf or Status.ExitCode.
const (
	ExitOK        = 0   // success
	ExitError     = 1   // task, model or tool error
	ExitTimeout   = 2   // the task's overall timeout (odek subagent)
	ExitSetup     = 3   // setup or contract error: flags, config, credentials
	ExitBudget    = 4   // execution budget exhausted
	ExitCancelled = 130 // cancelled by SIGINT/SIGTERM
)

// Outcome is what a run's error means to its caller: the status it
// reports, the process exit code and the event error_class.
type Outcome struct {
	Status     Status
	ExitCode   int
	ErrorClass string // "" on success
}

// OutcomeOf maps the error Run returned to the run's outcome: nil is
// success (exit 0), an exhausted budget budget_exhausted (exit 4), a
// cancelled context canceled (exit 130), anything else error (exit 1).
// Pure; it is the one mapping every front end uses.
func OutcomeOf(err error) Outcome {
	var s Status
	switch {
	case err == nil:
		s = StatusSuccess
	case errors.Is(err, ErrBudgetExceeded):
		s = StatusBudgetExhausted
	case errors.Is(err, context.Canceled):
		s = StatusCanceled
	default:
		s = StatusError
	}
	return Outcome{Status: s, ExitCode: s.ExitCode(), ErrorClass: ErrorClass(err)}
}

// ExitCode is the process exit code of a run that ended with status s;
// a status this package does not define (such as a sub-agent's
// "partial") is an error, exit 1.
func (s Status) ExitCode() int {
	switch s {
	case StatusSuccess:
		return ExitOK
	case StatusBudgetExhausted:
		return ExitBudget
	case StatusCanceled:
		return ExitCancelled
	}
	return ExitError
}
