package agent

// SignalType names a SignalEvent.
type SignalType string

// SignalBudgetWarning: a limit of the run's Budget (one that implements
// BudgetMeter) reached BudgetWarnShare of its maximum; sent once per limit
// and run, after the model response or tool batch that got it there.
const SignalBudgetWarning SignalType = "budget_warning"

// SignalAnswerStart: the model starts writing an answer (every model call
// starts one, and a retried attempt starts its call's answer over); the
// SignalAnswerDelta signals that follow continue it, until the next
// SignalAnswerStart. Sent only when the Model is a StreamingModel.
const SignalAnswerStart SignalType = "answer_start"

// SignalAnswerDelta: the next piece (SignalEvent.Text) of the answer the
// model is writing, masked by the run's Redactor as a stream, so a secret
// split across pieces is masked too; only text that may still turn out to
// be part of a secret is held back, and it follows at the end of the
// model call. Concatenated, the pieces of one answer are the Redactor's
// String of the answer's text.
const SignalAnswerDelta SignalType = "answer_delta"

// SignalEvent is a notice to the program that embeds the loop, delivered
// through Config.AgentSignalHandler. Signals are not odek.event/v1 events:
// they never reach an event sink.
type SignalEvent struct {
	Type      SignalType
	RunID     string
	Iteration int // 1-based; the iteration that raised the signal
	// Budget is set for SignalBudgetWarning.
	Budget *BudgetLevel
	// Text is set for SignalAnswerDelta: redacted answer text.
	Text string
}

// BudgetLevel is the use of one limit, in the units of
// BudgetExceededError.
type BudgetLevel struct {
	Limit    string
	Observed float64
	Max      float64
}

// signalBudget sends SignalBudgetWarning for every limit that just
// reached BudgetWarnShare. It costs nothing without a handler.
func (r *run) signalBudget(iter int) {
	if r.cfg.AgentSignalHandler == nil {
		return
	}
	m, ok := r.cfg.Budget.(BudgetMeter)
	if !ok {
		return
	}
	m.Levels(func(limit string, observed, max float64) {
		if max <= 0 || observed < BudgetWarnShare*max || r.warned[limit] {
			return
		}
		if r.warned == nil {
			r.warned = map[string]bool{}
		}
		r.warned[limit] = true
		r.cfg.AgentSignalHandler(SignalEvent{Type: SignalBudgetWarning, RunID: r.runID, Iteration: iter,
			Budget: &BudgetLevel{Limit: limit, Observed: observed, Max: max}})
	})
}
