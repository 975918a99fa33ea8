// Command embed runs odek's agent loop from another module: its own tool
// (word_count), its own model client (a scripted one, so the example needs
// no network or API key) and its own event sink. It is the smallest
// complete use of the Go API documented in docs/GOAPI.md, and CI runs it.
//
// A real program puts an adapter to its provider's SDK where scriptedModel
// is; every other line stays as it is.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
)

// wordCount is a custom tool: it counts the words of a text.
type wordCount struct{}

func (wordCount) Definition() agent.Definition {
	return agent.Definition{
		Name:        "word_count",
		Description: "Count the words of a text.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}
}

// Assess classifies a call before it runs: counting words touches nothing,
// so it is safe (the default policy runs safe calls without asking).
func (wordCount) Assess(args json.RawMessage) (agent.Assessment, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return agent.Assessment{}, err
	}
	return agent.Assessment{Class: agent.ClassSafe, Summary: map[string]any{"bytes": fmt.Sprint(len(a.Text))}}, nil
}

func (wordCount) Run(_ context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return agent.ToolResult{Text: "arguments: " + err.Error(), IsError: true}, nil
	}
	return agent.ToolResult{Text: fmt.Sprint(len(strings.Fields(a.Text)))}, nil
}

// scriptedModel is a model client of its own: it calls word_count on the
// user's goal, then answers with the tool's result.
type scriptedModel struct{}

func (scriptedModel) Complete(_ context.Context, req agent.Request) (*agent.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	usage := agent.Usage{PromptTokens: 40 * len(req.Messages), CompletionTokens: 12}
	switch last.Role {
	case agent.RoleUser:
		args, _ := json.Marshal(map[string]string{"text": last.Content})
		return &agent.Response{Usage: usage, Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
			{ID: "call-1", Function: agent.FunctionCall{Name: "word_count", Arguments: string(args)}},
		}}}, nil
	case agent.RoleTool:
		return &agent.Response{Usage: usage, Message: agent.Message{Role: agent.RoleAssistant,
			Content: "The goal has " + last.Content + " words."}}, nil
	}
	return nil, errors.New("scripted model: unexpected conversation")
}

// countingSink is an event sink of its own: it counts events by type.
type countingSink map[events.Type]int

func (s countingSink) Write(ev *events.Event) error {
	s[ev.Type]++
	return nil
}

func main() {
	sink := countingSink{}
	res, err := agent.Run(context.Background(), agent.Config{
		LLM:       scriptedModel{},
		Model:     "scripted",
		Tools:     []agent.Tool{wordCount{}},
		EventSink: sink,
	}, "count the words of this goal please")
	out := agent.OutcomeOf(err)
	fmt.Printf("answer: %s\nstatus: %s, iterations: %d, tool calls: %d, tokens in/out: %d/%d\n",
		res.Answer, out.Status, res.Iterations, res.ToolCalls, res.Usage.PromptTokens, res.Usage.CompletionTokens)
	fmt.Printf("events: run_started=%d tool_call_completed=%d run_completed=%d\n",
		sink[events.RunStarted], sink[events.ToolCallCompleted], sink[events.RunCompleted])
	if err != nil || res.Answer != "The goal has 7 words." || sink[events.ToolCallCompleted] != 1 || sink[events.RunCompleted] != 1 {
		fmt.Fprintln(os.Stderr, "embed: unexpected result:", err)
		os.Exit(1)
	}
	os.Exit(out.ExitCode)
}
