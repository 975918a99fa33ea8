package hooks

import (
	"context"
	"encoding/json"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
)

// Event types of the hook_* events (odek.event/v1 additive types),
// emitted into the run's stream for each pre_tool and post_tool hook run.
const (
	EventHookCompleted events.Type = "hook_completed"
	EventHookBlocked   events.Type = "hook_blocked"
	EventHookFailed    events.Type = "hook_failed"
)

// MaxResultChars bounds the tool result text a post_tool hook receives.
const MaxResultChars = 64 << 10

// WrapTools returns ts with every tool's Run going through the pre_tool
// and post_tool hooks (ts itself when neither has a hook). The pre_tool
// hooks run after the approval policy allowed the call and before it
// runs; a block returns an error result whose text — the hook's reason —
// the model sees, and the tool does not run. post_tool hooks see the
// result; they cannot change it. The run id, session id and the hook_*
// events come from the run (agent.CallFrom).
func (r *Runner) WrapTools(ts []agent.Tool) []agent.Tool {
	if !r.Has(PreTool) && !r.Has(PostTool) {
		return ts
	}
	out := make([]agent.Tool, len(ts))
	for i, t := range ts {
		out[i] = &hookedTool{Tool: t, r: r}
	}
	return out
}

type hookedTool struct {
	agent.Tool
	r *Runner
}

func (t *hookedTool) Run(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	call, _ := agent.CallFrom(ctx)
	name := t.Definition().Name
	var class string
	if a, err := t.Assess(args); err == nil {
		class = string(a.Class)
	}
	tin := &ToolInput{Name: name, Class: class, Arguments: args}
	if !json.Valid(args) {
		tin.Arguments = nil
	}
	in := Input{RunID: call.RunID, SessionID: call.SessionID, Cwd: t.r.o.Dir, Tool: tin}
	if t.r.Has(PreTool) {
		in.Event = PreTool
		d, reps := t.r.Fire(ctx, in)
		EmitReports(call, name, reps)
		if d.Block {
			return agent.ToolResult{Text: "blocked by a pre_tool hook: " + d.Reason, IsError: true}, nil
		}
	}
	res, err := t.Tool.Run(ctx, args)
	if t.r.Has(PostTool) {
		in.Event = PostTool
		text := res.Text
		if err != nil {
			text = err.Error()
		}
		ri := &ResultInput{Text: clip(text, MaxResultChars), IsError: res.IsError || err != nil}
		ri.Truncated = len(ri.Text) < len(text)
		in.Result = ri
		_, reps := t.r.Fire(ctx, in)
		EmitReports(call, name, reps)
	}
	return res, err
}

// EmitReports emits one hook_* event per hook run into the run's stream
// (call's): hook_completed, hook_blocked or hook_failed, naming the
// event, the hook and the tool whose call it was ("" for a lifecycle
// hook: no tool field).
func EmitReports(call agent.CallInfo, tool string, reps []Report) {
	for _, rep := range reps {
		typ := EventHookCompleted
		switch rep.Outcome {
		case OutcomeBlocked:
			typ = EventHookBlocked
		case OutcomeFailed:
			typ = EventHookFailed
		}
		data := map[string]any{"event": string(rep.Event), "hook": rep.Hook, "duration_ms": rep.Duration.Milliseconds()}
		if tool != "" {
			data["tool"] = tool
		}
		if rep.Reason != "" {
			data["reason"] = rep.Reason
		}
		if rep.Outcome == OutcomeFailed {
			data["fail_closed"] = rep.FailClosed
		}
		call.Emit(typ, data)
	}
}
