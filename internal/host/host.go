// Package host assembles one agent run from the operator's configuration:
// the LLM client, the built-in tools and any extra ones, the danger policy,
// the execution budget, the redactor, the context-window settings and the
// event sink, ready to hand to agent.Run.
//
// A process builds one Host (New) from its configuration — the LLM
// client, the shared extension servers, the sandbox template — and makes
// each run one Host.Run with a RunSpec, which returns the run's Outcome:
// `odek run` and `odek continue` once, `odek worker` and the bot's
// embedded workers once per job (JobRunner); `odek subagent` prepares its
// run with Host.Prepare and drives it with its own result shape. Build
// assembles a single run's agent.Config for them, so a setting means the
// same thing whichever way odek is used. Build does
// not read files or the environment itself: the caller passes a loaded
// *config.Config (cmd/* and internal/config own all reading) and, when it
// wants known secret values masked, the environment to learn them from.
//
// Concurrency and ownership: Build is safe for concurrent use; each call
// returns a Runtime of its own. The Runtime owns what Build started
// (extension servers once they are wired in) and releases it in Close; the
// caller owns the config and the sink it passed in.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/hooks"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/plan"
	"github.com/odekrun/odek/internal/privdir"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/skills/skilltool"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// ErrNoConfig is returned by Build when Options.Config is nil.
var ErrNoConfig = errors.New("host: Options.Config is required")

// Options configures Build. Only Config is required; every other field
// works at its zero value.
type Options struct {
	// Config is the loaded configuration with its endpoint resolved
	// (config.Load, then Config.ResolveEndpoint). Required.
	Config *config.Config
	// WorkDir is the root of the file tools and the shell's working
	// directory. "" means the process working directory.
	WorkDir string
	// Warn receives one human-readable line per configuration problem
	// that does not stop the run (an ignored section, an inactive cost
	// cap). nil discards them.
	Warn func(string)
	// Logger receives operational logs. nil means a logger that discards.
	Logger logrus.FieldLogger
	// Prompter asks the operator about calls the policy marks "prompt".
	// nil means nobody can be asked: the policy's non-interactive action
	// applies (deny by default).
	Prompter tools.Prompter
	// EventSink receives the run's odek.event/v1 events. nil means none.
	EventSink events.Sink
	// EventsIncludeArgs adds raw (redacted) tool arguments to
	// tool_call_started events.
	EventsIncludeArgs bool
	// Environ is scanned for secret-looking variables whose values the
	// redactor then masks everywhere (os.Environ() for a CLI run). nil
	// means only the API key is masked.
	Environ []string
	// LimitOverrides replaces the configured execution limits field by
	// field: each non-zero field wins (command-line flags, a job's budget).
	LimitOverrides budget.Limits
	// AdjustLimits, when set, sees the merged limits last and may change
	// them (a sub-agent lowering them to what its parent has left).
	AdjustLimits func(*budget.Limits)
	// ExtraTools are offered to the model after the built-ins. A name
	// that collides with a built-in is an error.
	ExtraTools []tools.Tool
	// RunID and SessionID are passed through to agent.Config.
	RunID, SessionID string

	// traced: Prepare opened the run's span; Build wraps the model and
	// the tools so their calls are spans (trace.go).
	traced bool
	// Extensions starts the MCP servers of the mcp_servers sections
	// (package ext) and offers their approved tools. Off ⇒ none start.
	Extensions bool
	// ExtensionSet, when set, is a Set already loaded with LoadExtensions
	// and shared between runs (a worker's jobs): its tools are offered,
	// Extensions is ignored, and Close leaves the servers running.
	ExtensionSet *ext.Set
	// LLM, when set, answers the model calls instead of a client built
	// from the config (a worker shares one client, and its connections,
	// between jobs).
	LLM agent.Model
	// MCPRoots, when set, returns the directories MCP servers are told
	// they may work in (roots/list). nil ⇒ the run's working directory.
	MCPRoots func() []string
	// MCPProgress, when set, receives the progress signals of running MCP
	// tool calls (they are also tool_call_progress events of the run).
	MCPProgress func(ext.ToolProgress)
	// ApproveMCP grants every extension approval for this run without
	// asking or saving (the caller read ODEK_APPROVE_MCP=1).
	ApproveMCP bool
	// ClientVersion is odek's version, sent to extension servers.
	ClientVersion string
	// Plan offers the plan tool and shows the current plan to the model
	// before every call.
	Plan bool
	// SavedPlan is a session's saved plan (session.Session.Plan) to start
	// from; an invalid one is dropped with a warning. nil ⇒ no plan yet.
	SavedPlan json.RawMessage
	// Delegate offers delegate_tasks while Depth is below
	// subagent.max_depth, and artifact_read for the children's artifacts.
	Delegate bool
	// Depth is this run's sub-agent depth (0 for a top-level run).
	Depth int
	// MaxRisk is this run's own max_risk when it is a sub-agent (a
	// tools.Class); the tasks it delegates are clamped to it. "" ⇒ none.
	MaxRisk string
	// Start is the budget clock's start. Zero means now.
	Start time.Time
	// Confine confines the run's tools to WorkDir: the file tools open
	// paths through an os.Root there, and the shell (and every sub-agent,
	// which inherits the confinement) runs under the Landlock ruleset the
	// sandbox settings describe, with a private temp dir Close removes.
	// Build fails when the kernel cannot enforce it.
	Confine bool
	// SandboxDeny are paths the sandbox never grants beside ODEK_HOME
	// (the artifacts directory above a chat's own).
	SandboxDeny []string
	// SandboxABI reports the kernel's Landlock ABI; nil ⇒ sandbox.ABI.
	SandboxABI func() int
	// SandboxTemplate, when set, is the shared part of the confined run's
	// ruleset, prepared once for many runs (a worker's jobs) from the
	// same config, ODEK_HOME and SandboxDeny, after the kernel was checked;
	// nil ⇒ Build reads the settings, checks the kernel and prepares it.
	SandboxTemplate *sandbox.Template
}

// Runtime is one assembled run.
type Runtime struct {
	// Agent is ready for agent.Run; callers may still set History,
	// Persist, RunID and SessionID.
	Agent agent.Config
	// Budget is the run's tracker, also set as Agent.Budget, kept here
	// so the caller can report the cost after the run.
	Budget *budget.Tracker
	// Redactor masks the API key and known secret values; the caller
	// uses it on anything it prints.
	Redactor *redact.Redactor
	// Extensions reports every configured extension server's outcome
	// (nil when Options.Extensions was off); it is also in the
	// run_started event under "mcp_servers".
	Extensions []ext.ServerReport
	// Artifacts holds the artifacts of this run that artifact_read may
	// serve (nil when no tool can register any).
	Artifacts *artifactstore.Store

	plan *plan.Tool
	// hooks runs the operator's hooks (issue 28); never nil after Build.
	hooks *hooks.Runner

	// span is the run's invoke_agent span (trace.go); zero when off.
	span telemetry.Span

	closeOnce sync.Once
	closers   []func() error
	closeErr  error
}

// SavedPlan is the run's plan in the form session.Session.Plan stores;
// nil without a plan tool or before the model made a plan.
func (r *Runtime) SavedPlan() json.RawMessage {
	if r == nil || r.plan == nil {
		return nil
	}
	return r.plan.State().Save()
}

// Close releases what Build started. It is safe to call more than once.
func (r *Runtime) Close() error {
	if r == nil {
		return nil
	}
	r.closeOnce.Do(func() {
		var errs []error
		for i := len(r.closers) - 1; i >= 0; i-- {
			errs = append(errs, r.closers[i]())
		}
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// Build assembles a Runtime from opts. Its errors are setup errors: bad
// limits sections, an unusable endpoint, colliding tool names.
func Build(ctx context.Context, opts Options) (*Runtime, error) {
	cfg := opts.Config
	if cfg == nil {
		return nil, ErrNoConfig
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	log := opts.Logger
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	workDir := opts.WorkDir
	if workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("host: working directory: %w", err)
		}
		workDir = wd
	}

	limits, prices := cfg.Limits.Budget(), cfg.Limits.Prices(cfg.Preset())
	limits = Override(limits, opts.LimitOverrides)
	if opts.AdjustLimits != nil {
		opts.AdjustLimits(&limits)
	}
	start := opts.Start
	if start.IsZero() {
		start = time.Now()
	}
	p, known := prices.For(cfg.Model)
	tracker := budget.NewTracker(limits, p, known, start)
	if tracker.CostCapInactive() {
		warn(fmt.Sprintf("cost cap inactive: max_cost_usd is set but no price is known for model %q (set limits.input_cost_per_million_usd / output_cost_per_million_usd or limits.model_prices in the operator config)", cfg.Model))
	}

	red := redact.New()
	red.AddValue(cfg.APIKey)
	if opts.Environ != nil {
		red.AddFromEnv(opts.Environ)
	}

	client := opts.LLM
	if client == nil {
		c, err := NewLLM(cfg)
		if err != nil {
			return nil, err
		}
		client = c
	}

	var err error
	rt := &Runtime{Budget: tracker, Redactor: red}
	topts := tools.Options{WorkDir: workDir, ShellTimeout: cfg.Tools.ShellTimeout()}
	artifactsDir := filepath.Join(cfg.Home, "artifacts")
	var confinement *subagent.Confinement
	var jail *sandbox.Jail
	if opts.Confine {
		var cleanup func() error
		jail, cleanup, err = confine(cfg, opts, workDir, warn)
		if err != nil {
			return nil, err
		}
		rt.closers = append(rt.closers, cleanup)
		topts.WorkDir, topts.Confine, topts.Sandbox = jail.Spec().Root, true, jail
		workDir = jail.Spec().Root
		// Children's artifact roots are written by their unconfined odek
		// processes, so they live outside the root, in a private directory
		// of this run that no sandbox grants (docs/SUBAGENTS.md).
		if opts.Delegate {
			private, err := subagent.PrivateArtifactsDir(cfg.Home)
			if err != nil {
				rt.Close()
				return nil, err
			}
			rt.closers = append(rt.closers, func() error { return os.RemoveAll(private) })
			artifactsDir = private
		}
		confinement = &subagent.Confinement{Root: workDir, Deny: opts.SandboxDeny}
	}
	toolset := tools.Builtins(topts)
	builtins := len(toolset)
	var planTool *plan.Tool
	if opts.Plan {
		initial, err := plan.Restore(opts.SavedPlan)
		if err != nil {
			warn(fmt.Sprintf("the session's saved plan is ignored: %v", err))
		}
		planTool = plan.NewTool(plan.Options{Emit: agent.Emit, Initial: initial})
		rt.plan = planTool
		toolset = append(toolset, planTool)
	}
	extensions := opts.Extensions || opts.ExtensionSet != nil
	if opts.Delegate || extensions {
		// Children's results and MCP envelopes register artifacts here.
		rt.Artifacts = &artifactstore.Store{}
		toolset = append(toolset, artifactstore.NewReadTool(rt.Artifacts))
	}
	if opts.Delegate {
		settings := cfg.Subagent.WithDefaults()
		if opts.Depth < settings.MaxDepth {
			toolset = append(toolset, subagent.NewDelegateTool(subagent.Options{
				Environ: opts.Environ, APIKey: cfg.APIKey, Model: cfg.Model, BaseURL: cfg.BaseURL,
				WorkDir: workDir, ArtifactsDir: artifactsDir, Store: rt.Artifacts, Confine: confinement,
				Settings: settings, Depth: opts.Depth, MaxRisk: opts.MaxRisk, Logger: log,
				TaskHook: rt.subagentHook, // hooks.go: subagent_start/stop (rt.hooks is set below)
			}))
		}
	}
	toolset, err = appendTools(toolset, opts.ExtraTools)
	if err != nil {
		return nil, err
	}
	// Wiring point (issue 28, Agent Skills): the skill list joins the
	// system prompt and the skill tool reads them (internal/skills/skilltool).
	systemPrompt := cfg.SystemPrompt
	skillList, skillTool, skillWarns := skilltool.ForRun(cfg.Layers.Operator.Raw, cfg.Home, cfg.ProjectDir)
	for _, w := range skillWarns {
		warn(w)
	}
	if skillTool != nil {
		if systemPrompt == "" {
			systemPrompt = agent.DefaultSystemPrompt
		}
		systemPrompt += skillList
		if toolset, err = appendTools(toolset, []tools.Tool{skillTool}); err != nil {
			return nil, err
		}
	}
	var started map[string]any
	var notices func() string
	if extensions {
		set := opts.ExtensionSet
		if set == nil {
			set, err = loadExtensions(ctx, opts, workDir, log, warn, toolNames(toolset), ext.ScopeShared, nil)
			if err != nil {
				return nil, err
			}
			rt.closers = append(rt.closers, closeSet(ctx, set))
		}
		sharedTools := set.ToolsFor(rt.Artifacts)
		if toolset, err = appendTools(toolset, sharedTools); err != nil {
			return nil, err
		}
		// Servers of scope "job" start for this run alone, in its root and,
		// when it is confined, in its jail.
		jobSet, err := loadExtensions(ctx, opts, workDir, log, warn, toolNames(toolset), ext.ScopeJob, jail)
		if err != nil {
			return nil, err
		}
		rt.closers = append(rt.closers, closeSet(ctx, jobSet))
		jobTools := jobSet.ToolsFor(rt.Artifacts)
		if toolset, err = appendTools(toolset, jobTools); err != nil {
			return nil, err
		}
		notices = joinNotices(ext.Notices(sharedTools), ext.Notices(jobTools))
		rt.Extensions = append(set.Report(), jobSet.Report()...)
		if data := append(set.ReportData(), jobSet.ReportData()...); len(data) > 0 {
			started = map[string]any{"mcp_servers": data}
		}
	}
	// Wiring point (issue 28, hooks): pre_tool/post_tool hooks wrap every
	// tool; Run fires the lifecycle hooks (internal/hooks, hooks.go).
	// Every other tool's calls hold the built-ins' git gate shared: a
	// sub-agent or an MCP server writing in the run's directory never runs
	// beside a line that runs git (internal/tools/gitline.go, issue 21).
	toolset = append(toolset[:builtins:builtins], tools.GateOthers(toolset[:builtins], toolset[builtins:])...)
	if toolset, err = rt.wireHooks(cfg, opts, workDir, jail, red, log, toolset); err != nil {
		return nil, err
	}
	var model agent.Model = client
	if opts.traced { // telemetry (issue 24, trace.go)
		model, toolset = traceModel(client, cfg.Model), traceTools(toolset)
	}
	rt.Agent = agent.Config{
		LLM:                model,
		Model:              cfg.Model,
		SystemPrompt:       systemPrompt, // issue 28: cfg.SystemPrompt plus the skills
		Tools:              toolset,
		Policy:             cfg.Dangerous.Policy(),
		Prompter:           opts.Prompter,
		MaxIterations:      cfg.MaxIterations,
		MaxToolParallel:    cfg.MaxToolParallel,
		MaxToolOutputBytes: cfg.Tools.MaxOutputBytes,
		EventSink:          opts.EventSink,
		EventsIncludeArgs:  opts.EventsIncludeArgs,
		Redactor:           red,
		Logger:             log,
		Budget:             tracker,
		ContextWindow:      ContextWindow(ctx, cfg, client, log).Tokens,
		ContextShare:       cfg.Context.Share,
		ContextLowShare:    cfg.Context.LowShare,
		NoCompaction:       cfg.Context.Compaction == "off",
		RunID:              opts.RunID,
		SessionID:          opts.SessionID,
		RunStartedData:     started,
		Sandboxed:          opts.Confine,
		Notices:            notices,
	}
	if planTool != nil {
		rt.Agent.Plan = planTool
	}
	return rt, nil
}

// ErrSandboxUnavailable is wrapped by Build and CheckSandbox when the
// sandbox is asked for and the kernel cannot enforce it.
var ErrSandboxUnavailable = errors.New("host: the sandbox cannot be enforced on this machine")

// CheckSandbox returns nil when the kernel's Landlock ABI (abi) is enough
// for the sandbox, else an error saying what is missing and how to opt
// out.
func CheckSandbox(abi int) error {
	what := sandbox.Missing(abi)
	if what == nil {
		return nil
	}
	return fmt.Errorf("%w: %v. To run jobs without confinement (every chat can then read the others' files and reach the network), set \"sandbox\": {\"mode\": \"off\"} in the operator config ($ODEK_HOME/config.json)", ErrSandboxUnavailable, what)
}

// confine builds the sandbox of a confined run: the settings, a check of
// the kernel, the run's private temp dir and the jail its commands start
// in. cleanup closes the jail and removes the temp dir.
func confine(cfg *config.Config, opts Options, workDir string, warn func(string)) (*sandbox.Jail, func() error, error) {
	tpl := opts.SandboxTemplate
	if tpl == nil {
		settings := cfg.Sandbox
		probe := opts.SandboxABI
		if probe == nil {
			probe = sandbox.ABI
		}
		if err := CheckSandbox(probe()); err != nil {
			return nil, nil, err
		}
		tpl = withSkillDirs(sandbox.NewTemplate(settings, append([]string{cfg.Home}, opts.SandboxDeny...), sandbox.Host), cfg, warn)
	}
	// The rules and os.Root see the real directory; a model naming the
	// root by its real path must match it.
	root, err := filepath.EvalSymlinks(workDir)
	if err != nil {
		return nil, nil, fmt.Errorf("host: the run's root %s: %w", workDir, err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, nil, fmt.Errorf("host: the run's root %s: %w", workDir, err)
	}
	// 128 random bits: a confined job may stat any path it can name, and
	// MkdirTemp's 32 bits can be enumerated or planted (privdir).
	tmp, err := privdir.Make("", "odek-job-")
	if err != nil {
		return nil, nil, fmt.Errorf("host: the run's private temp dir: %w", err)
	}
	cleanup := func() error { return os.RemoveAll(tmp) }
	spec, err := tpl.For(root, tmp)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	jail, err := sandbox.NewJail(spec)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return jail, func() error { return errors.Join(jail.Close(), cleanup()) }, nil
}

// StartupWindow states the default model's context window in a worker's
// start-up log (issue 29: every run is bounded, and the operator sees by
// what). It asks no endpoint: when the window is the endpoint's to report
// (odek's client, no operator value), it says it is asked at the first
// job and what applies if the endpoint does not say; otherwise it logs
// the resolution ContextWindow then repeats no more.
func StartupWindow(cfg *config.Config, client agent.Model, log logrus.FieldLogger) {
	if log == nil {
		return
	}
	if c, ok := client.(*llm.Client); ok && cfg.Context.Window[cfg.Model] <= 0 && c.DiscoversWindow() {
		res := llm.ResolveWindow(cfg.Model, 0, 0, cfg.Preset())
		log.WithFields(logrus.Fields{"model": cfg.Model, "otherwise": res.Tokens, "otherwise_source": res.Source}).
			Info("context window: asked of the endpoint at the first job")
		return
	}
	ContextWindow(context.Background(), cfg, client, log)
}

// windowLogged remembers the (model, window, source) triples already
// stated in the log, so a worker says it once, not per job.
var windowLogged sync.Map

// ContextWindow resolves the run's context window (llm.ResolveWindow):
// the operator's context_window, else what the endpoint reports (asked
// once per process, when client is odek's own and its endpoint may
// report one), else the built-in table, the preset, the default. The
// first resolution of each model is logged.
func ContextWindow(ctx context.Context, cfg *config.Config, client agent.Model, log logrus.FieldLogger) llm.WindowResolution {
	operator := cfg.Context.Window[cfg.Model]
	endpoint := 0
	if c, ok := client.(*llm.Client); ok && operator <= 0 && c.DiscoversWindow() {
		n, err := c.DiscoverWindow(ctx, cfg.Model)
		if err != nil && log != nil {
			log.WithError(err).WithField("model", cfg.Model).Debug("context window discovery failed")
		}
		endpoint = n
	}
	res := llm.ResolveWindow(cfg.Model, operator, endpoint, cfg.Preset())
	if _, seen := windowLogged.LoadOrStore(fmt.Sprint(cfg.Model, res), true); !seen && log != nil {
		// Info, not a warning: `odek run --quiet` prints warnings, and an
		// unknown model is not an error (`odek config show` states it too).
		e := log.WithFields(logrus.Fields{"model": cfg.Model, "context_window": res.Tokens, "source": res.Source})
		if res.Source == llm.WindowFromDefault {
			e.Info("context window of the model is unknown; assuming the conservative default (set context_window in the operator config)")
		} else {
			e.Info("context window")
		}
	}
	return res
}

// NewLLM builds the chat-completions client the config describes
// (Config.LLMConfig).
func NewLLM(cfg *config.Config) (*llm.Client, error) { return llm.New(cfg.LLMConfig()) }

// LoadExtensions starts the extension servers of opts.Config once, for
// runs that share them through Options.ExtensionSet. The tool names a run
// built with the same opts offers are reserved (a colliding MCP tool fails
// the load). The caller closes the Set.
func LoadExtensions(ctx context.Context, opts Options) (*ext.Set, error) {
	if opts.Config == nil {
		return nil, ErrNoConfig
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	names := toolNames(tools.Builtins(tools.Options{}))
	names = append(names, plan.Name, artifactstore.ReadToolName, subagent.ToolName)
	names = append(names, toolNames(opts.ExtraTools)...)
	return loadExtensions(ctx, opts, opts.WorkDir, opts.Logger, warn, names, ext.ScopeShared, nil)
}

// loadExtensions starts the servers of one scope (ext.ScopeShared or
// ext.ScopeJob), in jail when it is set.
func loadExtensions(ctx context.Context, opts Options, workDir string, log logrus.FieldLogger, warn func(string), reserved []string, scope string, jail *sandbox.Jail) (*ext.Set, error) {
	return ext.Load(ctx, ext.Options{
		Servers: opts.Config.MCPServers, Home: opts.Config.Home, WorkDir: workDir, Prompter: opts.Prompter,
		ApproveAll: opts.ApproveMCP, BuiltinNames: reserved, BaseEnv: opts.Environ,
		Logger: log, Warn: warn, ClientVersion: opts.ClientVersion,
		Roots: mcpRoots(opts.MCPRoots, workDir), OnProgress: opts.MCPProgress, Emit: agent.Emit,
		Scope: scope, Jail: jail,
	})
}

// mcpRoots is what MCP servers get for roots/list: the caller's roots, or
// the working directory (none when it is unknown).
func mcpRoots(roots func() []string, workDir string) func() []string {
	if roots != nil {
		return roots
	}
	if workDir == "" {
		return nil
	}
	return func() []string { return []string{workDir} }
}

// joinNotices is one agent.Config.Notices over several (nil ones
// skipped); nil when all are nil.
func joinNotices(fs ...func() string) func() string {
	fs = slices.DeleteFunc(fs, func(f func() string) bool { return f == nil })
	if len(fs) == 0 {
		return nil
	}
	return func() string {
		var parts []string
		for _, f := range fs {
			if n := f(); n != "" {
				parts = append(parts, n)
			}
		}
		return strings.Join(parts, "\n")
	}
}

// closeSet returns a closer that stops set's servers within closeTimeout.
func closeSet(ctx context.Context, set *ext.Set) func() error {
	return func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		return set.Close(cctx)
	}
}

func toolNames(ts []tools.Tool) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Definition().Name
	}
	return names
}

// closeTimeout bounds the shutdown of the extension servers in Close.
const closeTimeout = 15 * time.Second

// appendTools adds extra after base, refusing a name already taken.
func appendTools(base, extra []tools.Tool) ([]tools.Tool, error) {
	seen := make(map[string]bool, len(base)+len(extra))
	for _, t := range base {
		seen[t.Definition().Name] = true
	}
	out := append([]tools.Tool(nil), base...)
	for _, t := range extra {
		name := t.Definition().Name
		if seen[name] {
			return nil, fmt.Errorf("host: tool name %q is offered twice (it collides with another tool of the run)", name)
		}
		seen[name] = true
		out = append(out, t)
	}
	return out, nil
}

// JobLimits are a job's own budget as budget limits (nil ⇒ none).
func JobLimits(b *queue.Budget) budget.Limits {
	if b == nil {
		return budget.Limits{}
	}
	return budget.Limits{
		MaxRuntime:   time.Duration(b.MaxRuntimeSeconds * float64(time.Second)),
		MaxToolCalls: b.MaxToolCalls, MaxInputTokens: b.MaxInputTokens, MaxOutputTokens: b.MaxOutputTokens,
		MaxCostUSD: b.MaxCostUSD,
	}
}

// Override returns base with every non-zero field of over in its place.
func Override(base, over budget.Limits) budget.Limits {
	if over.MaxRuntime > 0 {
		base.MaxRuntime = over.MaxRuntime
	}
	if over.MaxToolCalls > 0 {
		base.MaxToolCalls = over.MaxToolCalls
	}
	if over.MaxInputTokens > 0 {
		base.MaxInputTokens = over.MaxInputTokens
	}
	if over.MaxOutputTokens > 0 {
		base.MaxOutputTokens = over.MaxOutputTokens
	}
	if over.MaxCostUSD > 0 {
		base.MaxCostUSD = over.MaxCostUSD
	}
	return base
}
