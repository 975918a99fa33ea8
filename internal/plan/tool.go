package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/tools"
)

// Name is the tool's name.
const Name = "plan"

// EmitFunc sends one event of the run ctx belongs to (agent.Emit fits).
type EmitFunc func(ctx context.Context, typ events.Type, data map[string]any)

// Options configure NewTool; the zero value works.
type Options struct {
	// Emit receives plan_created, plan_updated and plan_blocked; nil ⇒
	// events are not sent.
	Emit EmitFunc
	// MaxSteps bounds a plan's steps; 0 ⇒ DefaultMaxSteps, capped at
	// HardMaxSteps.
	MaxSteps int
	// Initial is the plan to start from (Restore of a session's saved
	// plan); the zero State starts without one. Its version goes on rising
	// from where it was.
	Initial State
}

// Tool is the built-in plan tool for one run. It also implements
// agent.PlanView: Block renders the current plan.
type Tool struct {
	opts Options

	mu    sync.Mutex
	state State
}

// NewTool returns a plan tool with an empty plan.
func NewTool(opts Options) *Tool {
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	opts.MaxSteps = min(opts.MaxSteps, HardMaxSteps)
	start := opts.Initial
	start.Steps = append([]Step(nil), start.Steps...)
	return &Tool{opts: opts, state: start}
}

// Definition describes the tool to the model.
func (t *Tool) Definition() tools.Definition {
	return tools.Definition{
		Name: Name,
		Description: fmt.Sprintf("Keep a short plan of the task and its progress. verb create: set the plan (replaces any plan) from steps "+
			"[{id, title}], 1 to %d. verb update: change steps atomically, updates [{id, status?, note?}] with status one of "+
			"pending, in_progress, done, blocked. verb complete: mark step_id done. verb get: show the plan with notes. "+
			"The current plan is shown to you before every step.", t.opts.MaxSteps),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"verb":{"type":"string","enum":["create","update","complete","get"]},` +
			`"steps":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"title":{"type":"string"}},"required":["id","title"]}},` +
			`"updates":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","done","blocked"]},"note":{"type":"string"}},"required":["id"]}},` +
			`"step_id":{"type":"string"}},"required":["verb"]}`),
	}
}

// Assess validates the arguments; the plan only touches its own memory,
// so every call is safe.
func (t *Tool) Assess(args json.RawMessage) (tools.Assessment, error) {
	a, err := ParseArgs(args, t.opts.MaxSteps)
	if err != nil {
		return tools.Assessment{}, err
	}
	return tools.Assessment{Class: tools.ClassSafe, Summary: map[string]any{"verb": a.Verb}}, nil
}

// Run applies one verb and emits the matching events. Errors the model
// should fix (bad arguments, unknown step, no plan) are error results.
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	a, err := ParseArgs(args, t.opts.MaxSteps)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	t.mu.Lock()
	next, ch, err := t.state.Apply(a)
	if err != nil {
		t.mu.Unlock()
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	t.state = next
	// Emitting under the lock keeps the event order equal to the version
	// order; Emit never blocks (the run's emitter drops when full).
	if ch.Bumped && t.opts.Emit != nil {
		for _, e := range Events(next, ch) {
			t.opts.Emit(ctx, e.Type, e.Data)
		}
	}
	t.mu.Unlock()
	if a.Verb == VerbGet {
		return tools.Result{Text: next.Text()}, nil
	}
	if !ch.Bumped {
		return tools.Result{Text: fmt.Sprintf("plan unchanged (v%d)\n%s", next.Version, next.Block())}, nil
	}
	return tools.Result{Text: fmt.Sprintf("plan v%d saved\n%s", next.Version, next.Block())}, nil
}

// Block renders the current plan (State.Block); "" before any create.
func (t *Tool) Block() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state.Block()
}

// State returns a copy of the current state.
func (t *Tool) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state
	s.Steps = append([]Step(nil), s.Steps...)
	return s
}

// Event is one plan event: its type and data.
type Event struct {
	Type events.Type
	Data map[string]any
}

// Events returns the events a change to state s maps to: nothing for a
// change that did not bump the version; plan_created or plan_updated
// otherwise, followed by plan_blocked when the change completed a streak
// of BlockedStreak transitions into blocked. Data holds counts and the
// version only. Pure.
func Events(s State, ch Change) []Event {
	if !ch.Bumped {
		return nil
	}
	c := s.Counts()
	var out []Event
	if ch.Created {
		out = append(out, event(events.PlanCreatedData{Steps: c.Steps, Version: s.Version}))
	} else {
		out = append(out, event(events.PlanUpdatedData{Steps: c.Steps, Done: c.Done, InProgress: c.InProgress,
			Blocked: c.Blocked, Pending: c.Pending, Version: s.Version}))
	}
	if ch.BlockedStreak {
		out = append(out, event(events.PlanBlockedData{Steps: c.Steps, Blocked: c.Blocked, Version: s.Version}))
	}
	return out
}

func event(p events.Payload) Event { return Event{p.EventType(), p.Data()} }
