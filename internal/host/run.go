package host

import (
	"context"
	"errors"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/outschema"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
)

// Host is what one process shares between its runs, built once by New
// from the loaded configuration: the LLM client (one connection pool), the
// extension servers of scope "shared" (started once), the sandbox's shared
// ruleset template (the kernel checked once) and the environment whose
// secrets every run's redactor masks. Each run is then one Run call with a
// RunSpec: `odek run` and `odek continue` make one, a worker and the bot's
// embedded workers one per job (through JobRunner).
//
// A Host is safe for concurrent Runs. It owns what New started; Close
// releases it.
type Host struct {
	cfg      *config.Config
	opts     HostOptions
	llm      agent.Model
	ext      *ext.Set
	ownExt   bool // New started ext; Close stops it
	template *sandbox.Template
}

// HostOptions configure New. Every field works at its zero value.
type HostOptions struct {
	// Logger receives operational logs. nil discards them.
	Logger logrus.FieldLogger
	// Warn receives one line per configuration problem that does not stop
	// a run. nil discards them.
	Warn func(string)
	// Environ is scanned for secret-looking variables whose values every
	// run's redactor masks (os.Environ() for odek's own commands).
	Environ []string
	// ClientVersion is odek's version, sent to extension servers.
	ClientVersion string
	// Extensions starts the extension servers of scope "shared" once, in
	// New; off ⇒ no MCP tools.
	Extensions bool
	// ExtensionSet, when set, are shared servers already started (a
	// JobRunner given its Extensions): every run offers their tools,
	// Extensions is ignored, and Close leaves them running.
	ExtensionSet *ext.Set
	// ApproveMCP grants every extension approval without asking
	// (ODEK_APPROVE_MCP=1).
	ApproveMCP bool
	// Prompter answers the extension servers' spawn approvals in New
	// (a terminal); nil ⇒ only servers approved ahead start.
	Prompter agent.Prompter
	// WorkDir is where shared extension servers start and what they are
	// told their root is. "" ⇒ the process working directory.
	WorkDir string
	// Confine prepares the sandbox for confined runs: the kernel is
	// checked once (New fails when it cannot enforce the sandbox) and the
	// shared part of the ruleset is built, with SandboxDeny (and
	// ODEK_HOME) never granted.
	Confine bool
	// SandboxDeny are paths no confined run may reach beside ODEK_HOME.
	SandboxDeny []string
	// SandboxABI reports the kernel's Landlock ABI; nil ⇒ sandbox.ABI.
	SandboxABI func() int
	// LLM, when set, answers the model calls instead of a client built
	// from the config.
	LLM agent.Model
	// MCPProgress, when set, receives the progress of running MCP calls.
	MCPProgress func(ext.ToolProgress)
}

// New builds the Host of cfg (loaded, endpoint resolved).
func New(ctx context.Context, cfg *config.Config, o HostOptions) (*Host, error) {
	if cfg == nil {
		return nil, ErrNoConfig
	}
	h := &Host{cfg: cfg, opts: o, llm: o.LLM}
	if h.llm == nil {
		c, err := NewLLM(cfg)
		if err != nil {
			return nil, err
		}
		h.llm = c
	}
	if o.Confine {
		probe := o.SandboxABI
		if probe == nil {
			probe = sandbox.ABI
		}
		if err := CheckSandbox(probe()); err != nil {
			return nil, err
		}
		h.template = withSkillDirs(sandbox.NewTemplate(cfg.Sandbox, append([]string{cfg.Home}, o.SandboxDeny...), sandbox.Host), cfg, o.Warn)
	}
	switch {
	case o.ExtensionSet != nil:
		h.ext = o.ExtensionSet
	case o.Extensions:
		set, err := LoadExtensions(ctx, h.options())
		if err != nil {
			return nil, err
		}
		h.ext, h.ownExt = set, true
	}
	return h, nil
}

// options are the per-run Options every run of h starts from.
func (h *Host) options() Options {
	return Options{
		Config: h.cfg, WorkDir: h.opts.WorkDir, Warn: h.opts.Warn, Logger: h.opts.Logger, Prompter: h.opts.Prompter,
		Environ: h.opts.Environ, LLM: h.llm, ApproveMCP: h.opts.ApproveMCP, ClientVersion: h.opts.ClientVersion,
		MCPProgress: h.opts.MCPProgress, SandboxABI: h.opts.SandboxABI,
	}
}

// Extensions reports the shared extension servers' outcomes (nil without
// extensions).
func (h *Host) Extensions() []ext.ServerReport {
	if h.ext == nil {
		return nil
	}
	return h.ext.Report()
}

// Config is the configuration h was built from. Treat it as read-only.
func (h *Host) Config() *config.Config { return h.cfg }

// Close stops the extension servers New started.
func (h *Host) Close() error {
	if h == nil || h.ext == nil || !h.ownExt {
		return nil
	}
	h.ownExt = false
	return closeSet(context.Background(), h.ext)()
}

// RunSpec is one run of a Host.
type RunSpec struct {
	// Goal is the user's request. Required.
	Goal string
	// Model replaces the configured model for this run ("" ⇒ the
	// config's); the caller decides which models are allowed.
	Model string
	// WorkDir is the run's root: the file tools' base, the shell's working
	// directory and, when Confine is set, all it may write. "" ⇒ the
	// process working directory.
	WorkDir string
	// Confine runs the tools confined to WorkDir (the Host must have been
	// built with HostOptions.Confine).
	Confine bool
	// Session, when set, is continued: its messages are the history, its
	// plan the plan tool's start, and the conversation is saved to Store
	// after every iteration. nil ⇒ a one-off run.
	Session *session.Session
	// Store saves Session; required with Session.
	Store session.Store
	// Budget replaces the configured limits field by field with each
	// non-zero field (flags of `odek run`).
	Budget budget.Limits
	// Lower, when set, may only lower the merged limits (a job's own
	// budget): each non-zero field wins where it is lower or where no
	// limit was set.
	Lower budget.Limits
	// Sink receives the run's odek.event/v1 events; nil ⇒ none.
	Sink events.Sink
	// EventsIncludeArgs adds raw (redacted) tool arguments to
	// tool_call_started events.
	EventsIncludeArgs bool
	// Prompter asks about tool calls the policy marks "prompt"; nil ⇒
	// the policy's non-interactive action.
	Prompter agent.Prompter
	// Depth is the run's sub-agent depth (0 for a top-level run).
	Depth int
	// MaxRisk is a sub-agent's own max_risk (a danger class); the tasks
	// it delegates are clamped to it. "" ⇒ none.
	MaxRisk string
	// Adjust, when set, sees the merged limits last and may change them
	// (a sub-agent inheriting what its parent has left).
	Adjust func(*budget.Limits)
	// Start is the budget clock's start; zero ⇒ now.
	Start time.Time
	// Logger, when set, replaces the Host's for this run (a job's fields).
	Logger logrus.FieldLogger
	// Warn, when set, replaces the Host's for this run.
	Warn func(string)
	// OutputSchema, when set, makes the final answer a JSON value valid
	// against it (issue 28: `odek run --output-schema`, a queued job's
	// output_schema): the goal carries the schema, an invalid answer gets
	// up to OutputRepairs corrective turns in the same run (an
	// output_invalid event each), and a run whose last answer is still
	// invalid ends with StatusOutputInvalid and ExitOutputInvalid. The
	// Outcome's Answer is then the JSON text and Output the parsed value.
	OutputSchema *outschema.Schema
	// OutputRepairs is the number of corrective turns (clamped to
	// 0..outschema.MaxRepairs).
	OutputRepairs int
	// ExtraTools are offered to the model after the built-ins (a job's
	// own tools, such as the schedule tool of its chat).
	ExtraTools []agent.Tool
	// Signals receives the run's agent signals, among them the answer as
	// the model writes it (agent.SignalAnswerStart, SignalAnswerDelta),
	// masked by the run's redactor; nil ⇒ none, and nothing streams.
	Signals func(agent.SignalEvent)
	// Images go to the model with the goal's message; nil ⇒ text only.
	// They are never saved with the session.
	Images []agent.Image
	// ImagesOptional: a model that refuses the images is asked again
	// without them (a job's vision "auto"); otherwise the refusal ends the
	// run.
	ImagesOptional bool
}

// Outcome is how a run ended, in the one shape every front end reports:
// `odek run --json` prints it, a worker turns it into its queue.Result.
type Outcome struct {
	// Status is one of the Status* constants; ExitCode the code `odek run`
	// exits with (odek-extension/v1, plus 130 for a cancelled run).
	Status   string
	ExitCode int
	// Answer is the final answer (or the partial answer of a failed run),
	// redacted.
	Answer string
	// Error is the run's error, redacted; "" on success.
	Error string
	// RunID and SessionID identify the run and its session ("" for none).
	RunID, SessionID string
	// Iterations counts model calls.
	Iterations int
	// Usage sums the model calls' tokens.
	Usage agent.Usage
	// CostUSD is the estimated cost (0 when prices are unknown).
	CostUSD float64
	// Duration is the run's wall-clock time.
	Duration time.Duration
	// Extensions are the outcomes of the run's extension servers (shared
	// and per job).
	Extensions []ext.ServerReport
	// Output is the parsed answer of a run with an OutputSchema that
	// ended valid; nil otherwise.
	Output any
}

// Outcome statuses (`odek run --json` status): agent's.
const (
	StatusSuccess         = string(agent.StatusSuccess)
	StatusError           = string(agent.StatusError)
	StatusBudgetExhausted = string(agent.StatusBudgetExhausted)
	StatusCanceled        = string(agent.StatusCanceled)
	// StatusOutputInvalid: the answer stayed invalid against the run's
	// OutputSchema (exit code ExitOutputInvalid).
	StatusOutputInvalid = "output_invalid"
)

// ExitOutputInvalid is the exit code of a run whose answer stayed invalid
// against its OutputSchema (distinct from the agent's 0–4 and 130).
const ExitOutputInvalid = outschema.ExitOutputInvalid

// OutcomeOf is agent.OutcomeOf's status and exit code.
func OutcomeOf(err error) (status string, code int) {
	o := agent.OutcomeOf(err)
	return string(o.Status), o.ExitCode
}

// ErrSetup is matched (errors.Is) by the errors Run returns before the
// agent started (the run could not be assembled): their exit code is
// ExitSetup. Their text is the cause's alone.
var ErrSetup = errors.New("host: run setup")

type setupError struct{ err error }

func (e setupError) Error() string   { return e.err.Error() }
func (e setupError) Unwrap() []error { return []error{ErrSetup, e.err} }

// Prepare assembles one run of spec without starting it: the Runtime's
// Agent is ready for agent.Run, with the session's history and
// persistence wired. For front ends that drive agent.Run themselves
// (`odek subagent`, which runs the task with its own result shape); the
// caller closes the Runtime. Errors match ErrSetup.
func (h *Host) Prepare(ctx context.Context, spec RunSpec) (*Runtime, error) {
	o := h.options()
	o.WorkDir, o.EventSink, o.EventsIncludeArgs, o.Prompter = spec.WorkDir, spec.Sink, spec.EventsIncludeArgs, spec.Prompter
	o.ExtensionSet = h.ext
	o.Confine, o.SandboxTemplate = spec.Confine, h.template
	o.LimitOverrides, o.Depth, o.Start, o.MaxRisk = spec.Budget, spec.Depth, spec.Start, spec.MaxRisk
	o.ExtraTools = append(o.ExtraTools, spec.ExtraTools...)
	lower, adjust := spec.Lower, spec.Adjust
	if lower != (budget.Limits{}) || adjust != nil {
		o.AdjustLimits = func(l *budget.Limits) {
			if lower != (budget.Limits{}) {
				*l, _ = budget.MergeLimits(*l, lower)
			}
			if adjust != nil {
				adjust(l)
			}
		}
	}
	if spec.Logger != nil {
		o.Logger = spec.Logger
	}
	if spec.Warn != nil {
		o.Warn = spec.Warn
	}
	o.Plan, o.Delegate = true, true
	if spec.Model != "" && spec.Model != h.cfg.Model {
		c := *h.cfg // shallow: only the model differs
		c.Model = spec.Model
		o.Config = &c
	}
	if spec.Session != nil {
		o.SessionID, o.SavedPlan = spec.Session.ID, spec.Session.Plan
		if spec.Store == nil {
			return nil, setupError{errors.New("host: RunSpec.Session without a Store")}
		}
	}
	if spec.Confine && h.template == nil {
		return nil, setupError{errors.New("host: a confined run needs a Host built with HostOptions.Confine")}
	}
	// telemetry (issue 24, trace.go): the run's span, and its model and
	// tool calls traced where they happen.
	var span telemetry.Span
	if telemetry.On() {
		if o.RunID == "" {
			o.RunID = session.NewID()
		}
		ctx, span = startAgentSpan(ctx, o.RunID, o.SessionID, o.Config.Model)
		// The run's outcome goes on its span from its result (RunAgent),
		// so the front end's sink stays nil when it has nothing else to
		// write events to, and the loop then builds none.
		o.EventSink, o.traced = telemetry.RunSink(span, telemetry.InPlace(o.EventSink)), true
	}
	rt, err := Build(ctx, o)
	if err != nil {
		span.Fail("setup", err)
		span.End()
		return nil, setupError{err}
	}
	if span.Recording() {
		rt.span = span
		rt.closers = append([]func() error{func() error { span.End(); return nil }}, rt.closers...)
	}
	rt.Agent.AgentSignalHandler = spec.Signals
	rt.Agent.GoalImages, rt.Agent.DropRefusedImages = spec.Images, spec.ImagesOptional
	if s := spec.Session; s != nil {
		rt.Agent.History = s.Messages
		rt.Agent.Persist = func(msgs []agent.Message) error {
			// The saved session keeps the masked text: a front end that
			// reads it (the compose bot has no model key) must not find a
			// secret the run saw. The next run's model sees the masks.
			s.Messages = redactMessages(rt.Redactor, msgs)
			s.Plan = rt.SavedPlan()
			return spec.Store.Save(context.WithoutCancel(ctx), s)
		}
	}
	return rt, nil
}

// Run runs one spec to its Outcome. The error is the run's (nil on
// success), already reflected in the Outcome; an error matching ErrSetup
// means the run could not be assembled (Outcome.ExitCode is ExitSetup).
func (h *Host) Run(ctx context.Context, spec RunSpec) (Outcome, error) {
	rt, err := h.Prepare(ctx, spec)
	if err != nil {
		return Outcome{Status: StatusError, ExitCode: ExitSetup, Error: err.Error()}, err
	}
	defer rt.Close()
	acfg := rt.Agent
	goal := spec.Goal
	var checker *outschema.Checker
	if spec.OutputSchema != nil {
		checker = outschema.NewChecker(spec.OutputSchema, spec.OutputRepairs)
		goal += spec.OutputSchema.Instructions()
		acfg.CheckAnswer = checker.Check
		acfg.OutputSchema = spec.OutputSchema.Raw // native response_format for the models that take it
	}
	// The lifecycle hooks fire inside the run, and it runs under the
	// run's span (RunAgent, hooks.go).
	res, runErr := rt.RunAgent(ctx, acfg, goal)
	out := Outcome{
		Answer: rt.Redactor.String(res.Answer), RunID: res.RunID, SessionID: acfg.SessionID, Iterations: res.Iterations,
		Usage: res.Usage, CostUSD: rt.Budget.Snapshot().CostUSD, Duration: res.Duration, Extensions: rt.Extensions,
	}
	out.Status, out.ExitCode = OutcomeOf(runErr)
	if runErr != nil {
		out.Error = rt.Redactor.String(runErr.Error())
		return out, runErr
	}
	if checker != nil {
		// The checker saw the model's own answer; what leaves the run is
		// the redacted one, so Output is parsed again from that (a value
		// the redactor changed so that it no longer fits the schema is
		// reported invalid rather than sent unmasked).
		_, err := checker.Result()
		var value any
		if err == nil {
			value, err = spec.OutputSchema.Check(out.Answer)
		}
		if err != nil {
			out.Status, out.ExitCode, out.Error = StatusOutputInvalid, ExitOutputInvalid, rt.Redactor.String(err.Error())
			return out, err
		}
		out.Answer, out.Output = outschema.Extract(out.Answer), value
	}
	return out, nil
}
