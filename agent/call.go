package agent

import (
	"context"

	"github.com/odekrun/odek/events"
)

// PlanView is what the loop needs of a plan: a compact rendering of the
// current state, shown to the model before every model call. Block must be
// safe to call concurrently with the tool calls that change the plan; ""
// means no plan yet (nothing is shown). odek's built-in plan tool implements it.
type PlanView interface {
	Block() string
}

// CallInfo describes the run a tool call belongs to. Tools that report
// events or account usage of their own (the plan tool, delegate_tasks) read
// it from the context of Tool.Run with CallFrom.
type CallInfo struct {
	// RunID is the run's id; SessionID the session's, "" when none.
	RunID, SessionID string
	// Budget is the run's Budget, nil when the run is unlimited. A tool
	// that spends on the run's behalf (children's tokens) adds to it.
	Budget Budget
	// Tool is the name of the calling tool; CallID the model's id of
	// this call (a tracing wrapper names its span with it).
	Tool, CallID string

	em *events.Emitter
}

// Emit sends one event of the run outside any iteration (iteration
// omitted, no tool field), through the run's non-blocking emitter. A run
// without a sink drops it. data passes through the run's redaction.
func (c CallInfo) Emit(typ events.Type, data map[string]any) {
	c.em.Emit(typ, 0, "", data)
}

// EmitPayload sends a typed payload as one event of the run (see Emit).
func (c CallInfo) EmitPayload(p events.Payload) {
	c.em.EmitPayload(0, "", p)
}

type callKey struct{}

// CallFrom returns the CallInfo of the run that called the tool; ok is
// false when ctx does not come from agent.Run (a tool called directly).
func CallFrom(ctx context.Context) (CallInfo, bool) {
	c, ok := ctx.Value(callKey{}).(CallInfo)
	return c, ok
}

// Emit sends an event of the run ctx belongs to (see CallInfo.Emit); it
// does nothing when ctx does not come from agent.Run. Its signature fits
// the plan tool's and delegate_tasks' emit hooks.
func Emit(ctx context.Context, typ events.Type, data map[string]any) {
	if c, ok := CallFrom(ctx); ok {
		c.Emit(typ, data)
	}
}

// withCall returns ctx carrying the run's CallInfo for tool name.
func (r *run) withCall(ctx context.Context, runID, tool, callID string) context.Context {
	c := r.callInfo(runID)
	c.Tool, c.CallID = tool, callID
	return context.WithValue(ctx, callKey{}, c)
}

// callInfo is the run's CallInfo outside any tool call.
func (r *run) callInfo(runID string) CallInfo {
	return CallInfo{RunID: runID, SessionID: r.cfg.SessionID, Budget: r.cfg.Budget, em: r.em}
}
