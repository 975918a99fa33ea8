package host

import (
	"context"
	"errors"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/hooks"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/tools"
	"github.com/sirupsen/logrus"
)

// This file is the wiring of issue 28's hooks into a run: the operator's
// hooks section (hooks.FromConfig; a project file cannot add any) builds
// one Runner per run; its command hooks start in the run's jail when the
// run is confined, in its working directory, with the minimal
// secret-free environment.

// ErrRefusedByHook is matched by the error of a run a session_start or
// user_prompt hook refused.
var ErrRefusedByHook = errors.New("host: the run was refused by a hook")

func (rt *Runtime) wireHooks(cfg *config.Config, opts Options, workDir string, jail *sandbox.Jail, red *redact.Redactor, log logrus.FieldLogger, ts []tools.Tool) ([]tools.Tool, error) {
	hc, err := hooks.FromConfig(cfg.Layers.Operator.Raw)
	if err != nil {
		return nil, err
	}
	o := hooks.Options{Environ: opts.Environ, Dir: workDir, Redactor: red, Logger: log}
	if jail != nil {
		o.Start = jail.Start
	}
	rt.hooks = hooks.NewRunner(hc, o)
	return rt.hooks.WrapTools(ts), nil
}

// lifecycle makes acfg fire the operator's lifecycle hooks inside the
// run (agent.Config.OnStart/OnEnd), so their hook_* events are in the
// run's stream and name its run id: session_start and user_prompt after
// run_started and before the first model call (a refusal ends the run
// with an error matching ErrRefusedByHook, and no model call is made),
// stop after an answer and session_end however the run ended, both
// before the closing event and both failing open.
func (rt *Runtime) lifecycle(acfg *agent.Config) {
	h := rt.hooks
	if !h.Has(hooks.SessionStart) && !h.Has(hooks.UserPrompt) && !h.Has(hooks.Stop) && !h.Has(hooks.SessionEnd) {
		return
	}
	acfg.OnStart = func(ctx context.Context, call agent.CallInfo, goal string) error {
		for _, ev := range []hooks.Event{hooks.SessionStart, hooks.UserPrompt} {
			d, reps := h.Fire(ctx, hooks.Input{Event: ev, RunID: call.RunID, SessionID: call.SessionID, Prompt: goal})
			hooks.EmitReports(call, "", reps)
			if d.Block {
				return errors.Join(ErrRefusedByHook, errors.New("a "+string(ev)+" hook refused the run: "+d.Reason))
			}
		}
		return nil
	}
	acfg.OnEnd = func(ctx context.Context, call agent.CallInfo, answer string, err error) {
		status, _ := OutcomeOf(err)
		if err == nil {
			_, reps := h.Fire(ctx, hooks.Input{Event: hooks.Stop, RunID: call.RunID, SessionID: call.SessionID, Answer: rt.Redactor.String(answer), Status: status})
			hooks.EmitReports(call, "", reps)
		}
		_, reps := h.Fire(ctx, hooks.Input{Event: hooks.SessionEnd, RunID: call.RunID, SessionID: call.SessionID, Status: status})
		hooks.EmitReports(call, "", reps)
	}
}

// subagentHook fires subagent_start (exit 2 or a block decision refuses
// the task) and subagent_stop (fails open) for one delegated task, with
// the hook_* events of each hook run in the parent's stream, as the tool
// hooks report theirs.
func (rt *Runtime) subagentHook(ctx context.Context, ev subagent.TaskEvent) string {
	if rt.hooks == nil {
		return ""
	}
	call, _ := agent.CallFrom(ctx)
	in := hooks.Input{Event: hooks.SubagentStop, RunID: call.RunID, SessionID: call.SessionID, Prompt: ev.Goal, TaskID: ev.TaskID}
	if ev.Start {
		in.Event = hooks.SubagentStart
	} else if ev.Result != nil {
		in.Status, in.Answer = ev.Result.Status, ev.Result.Summary
		if ev.Result.Status != subagent.StatusSuccess && ev.Result.Error != "" {
			in.Answer = ev.Result.Error
		}
	}
	if !rt.hooks.Has(in.Event) {
		return ""
	}
	d, reps := rt.hooks.Fire(ctx, in)
	hooks.EmitReports(call, subagent.ToolName, reps)
	if d.Block && ev.Start {
		return d.Reason
	}
	return ""
}

// RunAgent is agent.Run of acfg (this Runtime's Agent, adjusted by the
// caller) under the run's span, with the operator's lifecycle hooks fired
// inside it: Host.Run's loop, and that of front ends that drive the loop
// themselves (`odek subagent`).
func (rt *Runtime) RunAgent(ctx context.Context, acfg agent.Config, goal string) (*agent.Result, error) {
	rt.lifecycle(&acfg)
	res, err := agent.Run(rt.Context(ctx), acfg, goal) // the run's span (trace.go)
	rt.runDone(acfg, res, err)
	return res, err
}
