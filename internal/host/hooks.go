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
