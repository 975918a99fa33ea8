package subagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
)

// StageDir is the workspace-relative directory under which a child stages
// result files: <WorkDir>/.odek/stage/<task_id>/.
const StageDir = ".odek/stage"

// RunOptions configure RunTask.
type RunOptions struct {
	// Agent is the child's assembled run (host.Build). RunTask replaces its
	// Prompter (nobody is asked) and tightens its Policy; it wraps its
	// EventSink to collect denials.
	Agent agent.Config
	// Task is the parsed task.
	Task Task
	// WorkDir is the workspace the file tools work in; staged files are
	// looked for under WorkDir/StageDir/<task_id>, through descriptors
	// (a confined chat can write there). Required when the task has an
	// artifact_root.
	WorkDir string
	// Start is when the child started (for duration_seconds); zero ⇒ now.
	Start time.Time
	// Run runs the loop; nil ⇒ agent.Run. `odek subagent` passes its
	// Runtime's RunAgent, which fires the operator's lifecycle hooks
	// around the loop as every other front end does.
	Run func(ctx context.Context, cfg agent.Config, goal string) (*agent.Result, error)
}

// ChildPolicy is the child's policy: p with every prompt denied (nobody
// can be asked) and, when maxRisk is set, every class more severe than
// maxRisk denied. Pure.
func ChildPolicy(p tools.Policy, maxRisk tools.Class) tools.Policy {
	out := tools.Policy{Classes: make(map[tools.Class]tools.Action), NonInteractive: tools.ActionDeny}
	for _, c := range []tools.Class{tools.ClassSafe, tools.ClassLocalWrite, tools.ClassSystemWrite, tools.ClassDestructive,
		tools.ClassCodeExecution, tools.ClassNetworkEgress, tools.ClassInstall, tools.ClassUnknown} {
		a := p.Decide(c)
		if a == tools.ActionPrompt {
			a = tools.ActionDeny
		}
		if maxRisk != "" && tools.Severity(c) > tools.Severity(maxRisk) {
			a = tools.ActionDeny
		}
		out.Classes[c] = a
	}
	return out
}

// RunTask runs one task to a Result. It never panics on a model or tool
// failure; the caller maps the Result to an exit code with ExitCode.
func RunTask(ctx context.Context, o RunOptions) *Result {
	start := o.Start
	if start.IsZero() {
		start = time.Now()
	}
	res := &Result{Artifacts: []artifacts.RefSpec{}, Denials: []Denial{}}
	finish := func() *Result {
		res.DurationSeconds = round3(time.Since(start).Seconds())
		return res
	}
	if err := o.Task.Budget.Exhausted(); err != nil {
		res.Status, res.Error = StatusBudgetExhausted, err.Error()
		return finish()
	}
	cfg := o.Agent
	if cfg.Redactor == nil {
		cfg.Redactor = redact.New() // what the loop uses without one: patterns only
	}
	cfg.Prompter = nil
	cfg.Policy = ChildPolicy(cfg.Policy, tools.Class(o.Task.MaxRisk))
	dc := &denialCollector{policy: cfg.Policy, calls: make(map[string]pendingCall)}
	if cfg.EventSink != nil {
		cfg.EventSink = events.Multi(cfg.EventSink, dc)
	} else {
		cfg.EventSink = dc
	}

	stage := ""
	if o.Task.ArtifactRoot != "" {
		name := o.Task.TaskID
		if name == "" {
			name = randomID()
		}
		var err error
		if stage, err = prepareStage(o.WorkDir, name); err != nil {
			res.Status, res.Error = StatusError, err.Error()
			return finish()
		}
	}

	runCtx := ctx
	var cancel context.CancelFunc = func() {}
	if o.Task.TimeoutSeconds > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, time.Duration(o.Task.TimeoutSeconds*float64(time.Second)), errTaskTimeout)
	}
	run := o.Run
	if run == nil {
		run = agent.Run
	}
	ar, err := run(runCtx, cfg, Message(o.Task, stage))
	if ar == nil {
		ar = &agent.Result{}
	}
	timedOut := err != nil && ctx.Err() == nil && errors.Is(context.Cause(runCtx), errTaskTimeout)
	cancel()

	res.Summary = cfg.Redactor.String(ar.Answer)
	res.Iterations = ar.Iterations
	res.InputTokens, res.OutputTokens = ar.Usage.PromptTokens, ar.Usage.CompletionTokens
	res.TokensUsed = res.InputTokens + res.OutputTokens
	res.ToolCalls = ar.ToolCalls
	res.Denials = dc.list()

	if stage != "" {
		refs, aerr := CollectArtifacts(o.WorkDir, stage, o.Task.ArtifactRoot)
		res.Artifacts = refs
		if aerr != nil && err == nil {
			err = aerr
		}
	}
	switch {
	case err == nil:
		res.Status = StatusSuccess
	case timedOut:
		res.TimedOut = true
		res.Status = StatusError
		if res.Summary != "" {
			res.Status = StatusPartial
		}
		res.Error = fmt.Sprintf("subagent: overall timeout of %gs exceeded", o.Task.TimeoutSeconds)
	case errors.Is(err, budget.ErrExceeded):
		res.Status = StatusBudgetExhausted
		res.Error = cfg.Redactor.String(err.Error())
	default:
		res.Status = StatusError
		if res.Summary != "" && !errors.Is(err, context.Canceled) {
			res.Status = StatusPartial
		}
		res.Error = cfg.Redactor.String(err.Error())
	}
	return finish()
}

var errTaskTimeout = errors.New("subagent: task timeout")

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func randomID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Message is the child's first user message: the goal, then the context
// and guidance, then where to stage result files (stage, relative to the
// workspace).
func Message(t Task, stage string) string {
	var b strings.Builder
	b.WriteString(t.Goal)
	if t.Context != "" {
		b.WriteString("\n\nContext from the delegating agent:\n")
		b.WriteString(t.Context)
	}
	if t.Guidance != "" {
		b.WriteString("\n\nGuidance:\n")
		b.WriteString(t.Guidance)
	}
	if stage != "" {
		b.WriteString("\n\nTo hand files back to the delegating agent, write them under ")
		b.WriteString(stage)
		b.WriteString("/ — they are returned as artifacts. Reply with a short summary of what you found or did.")
	}
	return b.String()
}

// denialCollector is an events.Sink that pairs tool_call_started (the
// call's class) with tool_call_failed error_class "denied" and rebuilds
// the policy's reason, which names only the tool, the class and the
// config key.
type denialCollector struct {
	policy tools.Policy

	mu      sync.Mutex
	calls   map[string]pendingCall
	denials []Denial
}

type pendingCall struct{ tool, class string }

func (d *denialCollector) Write(ev *events.Event) error {
	switch ev.Type {
	case events.ToolCallStarted:
		var s events.ToolCallStartedData
		s.Decode(ev.Data)
		class, _ := s.ArgsSummary["class"].(string)
		d.mu.Lock()
		d.calls[s.CallID] = pendingCall{tool: ev.Tool, class: class}
		d.mu.Unlock()
	case events.ToolCallFailed, events.ToolCallCompleted:
		// Both carry call_id; error_class is tool_call_failed's.
		var f events.ToolCallFailedData
		f.Decode(ev.Data)
		d.mu.Lock()
		defer d.mu.Unlock()
		pc, ok := d.calls[f.CallID]
		delete(d.calls, f.CallID)
		if ok && ev.Type == events.ToolCallFailed && f.ErrorClass == "denied" {
			_, reason := tools.Authorize(context.Background(), d.policy, nil, pc.tool, tools.Assessment{Class: tools.Class(pc.class)})
			d.denials = append(d.denials, Denial{Tool: pc.tool, Class: pc.class, Reason: reason})
		}
	}
	return nil
}

func (d *denialCollector) list() []Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Denial{}, d.denials...)
}
