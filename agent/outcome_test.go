package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
)

func TestOutcomeOf(t *testing.T) {
	exceeded := &budget.ExceededError{Limit: budget.LimitToolCalls, Observed: 3, Max: 2}
	tests := []struct {
		name string
		err  error
		want agent.Outcome
	}{
		{"success", nil, agent.Outcome{Status: agent.StatusSuccess, ExitCode: 0}},
		{"budget", fmt.Errorf("wrapped: %w", exceeded), agent.Outcome{Status: agent.StatusBudgetExhausted, ExitCode: 4, ErrorClass: "budget_exceeded"}},
		{"cancelled", context.Canceled, agent.Outcome{Status: agent.StatusCanceled, ExitCode: 130, ErrorClass: "context_canceled"}},
		{"deadline is an error", context.DeadlineExceeded, agent.Outcome{Status: agent.StatusError, ExitCode: 1, ErrorClass: "deadline_exceeded"}},
		{"max iterations", fmt.Errorf("%w: 3", agent.ErrMaxIterations), agent.Outcome{Status: agent.StatusError, ExitCode: 1, ErrorClass: "max_iterations"}},
		{"model", fmt.Errorf("agent: model call 1: %w", &llm.APIError{StatusCode: 401}), agent.Outcome{Status: agent.StatusError, ExitCode: 1, ErrorClass: "llm_error"}},
		{"plain", errors.New("x"), agent.Outcome{Status: agent.StatusError, ExitCode: 1, ErrorClass: "error"}},
		{"own context-length error", fmt.Errorf("mine: %w", agent.ErrContextLength), agent.Outcome{Status: agent.StatusError, ExitCode: 1, ErrorClass: "llm_context_length"}},
	}
	for _, tt := range tests {
		if got := agent.OutcomeOf(tt.err); got != tt.want {
			t.Errorf("%s: OutcomeOf = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	for s, code := range map[agent.Status]int{"success": 0, "budget_exhausted": 4, "canceled": 130, "error": 1, "partial": 1, "": 1} {
		if got := s.ExitCode(); got != code {
			t.Errorf("Status(%q).ExitCode() = %d, want %d", s, got, code)
		}
	}
}

// TestErrorClassOfModelErrors: the llm client's errors keep the classes
// they had when agent knew them by type.
func TestErrorClassOfModelErrors(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{llm.ErrUnauthorized, "llm_unauthorized"},
		{llm.ErrQuotaExhausted, "llm_quota_exhausted"},
		{llm.ErrContextLength, "llm_context_length"},
		{llm.ErrMalformedResponse, "llm_error"},
		{llm.ErrStreamInterrupted, "llm_error"},
		{fmt.Errorf("%w after 3 attempts: %w", llm.ErrRetriesExhausted, &llm.APIError{StatusCode: 503}), "llm_error"},
		{&llm.IdleTimeoutError{Idle: time.Second}, "llm_error"},
		{&llm.LineTooLongError{Limit: 1, Observed: 2}, "llm_error"},
		{&llm.APIError{StatusCode: 500}, "llm_error"},
		{llm.ErrInvalidRequest, "error"},
		{llm.ErrOutputTruncated, "error"},
		{&llm.RequestTimeoutError{Timeout: time.Second}, "error"},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("agent: model call 2: %w", tt.err)
		if got := agent.ErrorClass(wrapped); got != tt.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if !errors.Is(llm.ErrContextLength, agent.ErrContextLength) {
		t.Error("llm.ErrContextLength does not match agent.ErrContextLength: the loop would not trim")
	}
}

// TestBudgetWarningSignal: a limit at 80% raises one budget_warning
// signal, sent to the handler and never to the event sink.
func TestBudgetWarningSignal(t *testing.T) {
	var turns []scriptedTurn
	for i := range 4 {
		turns = append(turns, calls(call(fmt.Sprint("c", i), "echo", `{}`)))
	}
	turns = append(turns, scriptedTurn{msg: llm.Message{Role: llm.RoleAssistant, Content: "done"}})
	var got []agent.SignalEvent
	sink := &jsonlSink{}
	cfg := agent.Config{
		LLM: &scripted{turns: turns}, Model: "m", Tools: []agent.Tool{echoTool()}, EventSink: sink,
		Budget:             budget.NewTracker(budget.Limits{MaxToolCalls: 5}, budget.Prices{}, false, time.Now()),
		AgentSignalHandler: func(s agent.SignalEvent) { got = append(got, s) },
	}
	res, err := agent.Run(context.Background(), cfg, "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("signals = %+v, want one", got)
	}
	s := got[0]
	if s.Type != agent.SignalBudgetWarning || s.RunID != res.RunID || s.Iteration != 4 || s.Budget == nil ||
		*s.Budget != (agent.BudgetLevel{Limit: "tool_calls", Observed: 4, Max: 5}) {
		t.Errorf("signal = %+v (budget %+v)", s, s.Budget)
	}
	if strings.Contains(sink.buf.String(), "budget_warning") {
		t.Error("a signal reached the event stream")
	}
}
