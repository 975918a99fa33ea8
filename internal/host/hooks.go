package host

import (
	"context"
	"errors"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/hooks"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/session"
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

// hooksBefore fires session_start and user_prompt. The run id is fixed
// here so the hooks and the event stream name the same run.
func (rt *Runtime) hooksBefore(ctx context.Context, acfg *agent.Config, spec RunSpec) (out Outcome, refused bool, err error) {
	if !rt.hooks.Has(hooks.SessionStart) && !rt.hooks.Has(hooks.UserPrompt) && !rt.hooks.Has(hooks.Stop) && !rt.hooks.Has(hooks.SessionEnd) {
		return Outcome{}, false, nil
	}
	if acfg.RunID == "" {
		acfg.RunID = session.NewID()
	}
	for _, ev := range []hooks.Event{hooks.SessionStart, hooks.UserPrompt} {
		d, _ := rt.hooks.Fire(ctx, hooks.Input{Event: ev, RunID: acfg.RunID, SessionID: acfg.SessionID, Prompt: spec.Goal})
		if d.Block {
			err := errors.Join(ErrRefusedByHook, errors.New("a "+string(ev)+" hook refused the run: "+d.Reason))
			return Outcome{Status: StatusError, ExitCode: ExitError, Error: rt.Redactor.String(err.Error()), RunID: acfg.RunID, SessionID: acfg.SessionID}, true, err
		}
	}
	return Outcome{}, false, nil
}

// hooksAfter fires stop (after an answer) and session_end; both fail open.
func (rt *Runtime) hooksAfter(ctx context.Context, acfg agent.Config, res *agent.Result, runErr error) {
	if res == nil {
		res = &agent.Result{RunID: acfg.RunID}
	}
	ctx = context.WithoutCancel(ctx)
	status, _ := OutcomeOf(runErr)
	if runErr == nil {
		rt.hooks.Fire(ctx, hooks.Input{Event: hooks.Stop, RunID: res.RunID, SessionID: acfg.SessionID, Answer: rt.Redactor.String(res.Answer), Status: status})
	}
	rt.hooks.Fire(ctx, hooks.Input{Event: hooks.SessionEnd, RunID: res.RunID, SessionID: acfg.SessionID, Status: status})
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
// caller) with the operator's lifecycle hooks around it, as Host.Run
// fires them: session_start and user_prompt before (a refusal is the
// run's error, matching ErrRefusedByHook, and no model call is made),
// stop and session_end after. For front ends that drive the loop
// themselves (`odek subagent`).
func (rt *Runtime) RunAgent(ctx context.Context, acfg agent.Config, goal string) (*agent.Result, error) {
	if _, refused, err := rt.hooksBefore(ctx, &acfg, RunSpec{Goal: goal}); refused {
		return &agent.Result{RunID: acfg.RunID}, err
	}
	res, err := agent.Run(ctx, acfg, goal)
	rt.hooksAfter(ctx, acfg, res, err)
	return res, err
}
