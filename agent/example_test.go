package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/odekrun/odek/agent"
)

// upper is a tool of the embedding program.
type upper struct{}

func (upper) Definition() agent.Definition {
	return agent.Definition{Name: "upper", Description: "Upper-case a text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
}

func (upper) Assess(json.RawMessage) (agent.Assessment, error) {
	return agent.Assessment{Class: agent.ClassSafe}, nil
}

func (upper) Run(_ context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return agent.ToolResult{Text: err.Error(), IsError: true}, nil
	}
	return agent.ToolResult{Text: strings.ToUpper(a.Text)}, nil
}

// twoStep is a model client of the embedding program: it calls the tool
// once, then answers with what the tool returned.
type twoStep struct{}

func (twoStep) Complete(_ context.Context, req agent.Request) (*agent.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleTool {
		return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "Done: " + last.Content}}, nil
	}
	return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "c1", Function: agent.FunctionCall{Name: "upper", Arguments: `{"text":"hello"}`}},
	}}}, nil
}

// Run drives a goal to an answer with the program's own model client and
// tool; OutcomeOf turns the run's error into a status and an exit code.
func ExampleRun() {
	res, err := agent.Run(context.Background(), agent.Config{
		LLM:   twoStep{},
		Model: "example",
		Tools: []agent.Tool{upper{}},
	}, "shout hello")
	out := agent.OutcomeOf(err)
	fmt.Println(res.Answer)
	fmt.Println(out.Status, out.ExitCode, res.Iterations, res.ToolCalls)
	// Output:
	// Done: HELLO
	// success 0 2 1
}

func ExampleOutcomeOf() {
	budget := &agent.BudgetExceededError{Limit: "tool_calls", Observed: 11, Max: 10}
	for _, err := range []error{nil, budget, context.Canceled, agent.ErrMaxIterations} {
		o := agent.OutcomeOf(err)
		fmt.Printf("%s exit=%d class=%q\n", o.Status, o.ExitCode, o.ErrorClass)
	}
	// Output:
	// success exit=0 class=""
	// budget_exhausted exit=4 class="budget_exceeded"
	// canceled exit=130 class="context_canceled"
	// error exit=1 class="max_iterations"
}
