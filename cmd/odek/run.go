package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/outschema"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/internal/tools"
	"github.com/sirupsen/logrus"
)

type runFlags struct {
	model, baseURL, eventsPath string
	maxIter                    int
	includeArgs, jsonOut       bool
	quiet                      bool
	confine                    bool
	session                    bool   // run: persist a new session
	resumeID                   string // continue: session id ("" ⇒ latest)
	cont                       bool   // continue mode
	refs                       []session.ExternalRef
	// Budget flags; zero ⇒ not set on the command line.
	maxRuntime                time.Duration
	maxToolCalls              int
	maxInputTok, maxOutputTok int
	maxCostUSD                float64
	// --output-schema (issue 28, output.go): schema file, repair turns.
	outputSchema  string
	outputRepairs int
}

func parseRunFlags(args []string, stderr io.Writer, cont bool) (*runFlags, string, error) {
	f := &runFlags{cont: cont}
	name := "odek run"
	if cont {
		name = "odek continue"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if cont {
		fs.StringVar(&f.resumeID, "id", "", "session to continue (default: the most recently updated)")
	} else {
		fs.BoolVar(&f.session, "session", false, "save the conversation as a session after every step (resume with odek continue)")
	}
	fs.SetOutput(stderr)
	fs.StringVar(&f.model, "model", "", "model id (overrides config and ODEK_MODEL)")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible base URL, e.g. https://api.openai.com/v1")
	fs.IntVar(&f.maxIter, "max-iter", 0, "maximum model calls (default 90)")
	fs.StringVar(&f.eventsPath, "events-jsonl", "", "append the odek.event/v1 stream to this file (0600, synced per event)")
	fs.BoolVar(&f.includeArgs, "events-include-args", false, "add raw (redacted) tool arguments to tool_call_started events")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object with status, answer, usage… instead of the bare answer")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fs.BoolVar(&f.confine, "confine", false, "confine the tools to the working directory: file tools cannot leave it, the shell runs under Landlock (config sandbox.confine)")
	fs.Func("max-runtime", "wall-clock budget for the whole run, e.g. 90s or 5m (plain numbers are seconds)", func(v string) error {
		d, err := config.ParseSeconds(v)
		f.maxRuntime = d
		return err
	})
	fs.Func("external-ref", "attach an external-state ref to the session: kind=...,uri=...,created_by=...[,read_only=true] (repeatable; stored, never dereferenced)", func(v string) error {
		r, err := session.ParseExternalRef(v)
		if err != nil {
			return err
		}
		f.refs = append(f.refs, r)
		return nil
	})
	fs.StringVar(&f.outputSchema, "output-schema", "", "the final answer must be JSON valid against this JSON Schema file (draft 2020-12); exit 5 when it stays invalid")
	fs.IntVar(&f.outputRepairs, "output-repairs", outschema.DefaultRepairs, "with --output-schema: corrective turns after an invalid answer (at most 5)")
	fs.IntVar(&f.maxToolCalls, "max-tool-calls", 0, "budget: tool calls for the run (0 = config / unlimited)")
	fs.IntVar(&f.maxInputTok, "max-input-tokens", 0, "budget: input tokens for the run")
	fs.IntVar(&f.maxOutputTok, "max-output-tokens", 0, "budget: output tokens for the run")
	fs.Float64Var(&f.maxCostUSD, "max-cost-usd", 0, "budget: estimated cost in USD (needs prices in the limits config)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s [flags] [--] <goal>\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, "", withCode(exitOK, errors.Join(errReported, err))
		}
		return nil, "", withCode(exitSetup, errors.Join(errReported, err))
	}
	for name, v := range map[string]float64{"--max-iter": float64(f.maxIter), "--max-tool-calls": float64(f.maxToolCalls),
		"--max-input-tokens": float64(f.maxInputTok), "--max-output-tokens": float64(f.maxOutputTok), "--max-cost-usd": f.maxCostUSD} {
		if v < 0 {
			return nil, "", usageErr("%s must be ≥ 0, got %v", name, v)
		}
	}
	if len(f.refs) > 0 && !f.session && !cont {
		return nil, "", usageErr("--external-ref is stored with a session: add --session")
	}
	goal := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if goal == "" {
		return nil, "", usageErr("%s needs a goal: %s \"<goal>\"", name, name)
	}
	return f, goal, nil
}

// jsonResult is the --json output object.
type jsonResult struct {
	Status     string      `json:"status"` // success, error, budget_exhausted, canceled
	Answer     string      `json:"answer"`
	Error      string      `json:"error,omitempty"`
	RunID      string      `json:"run_id"`
	SessionID  string      `json:"session_id,omitempty"`
	Iterations int         `json:"iterations"`
	Usage      agent.Usage `json:"usage"`
	// CachedShare is the share of input tokens the provider's prompt
	// cache served (usage.cached_tokens / usage.input_tokens).
	CachedShare float64 `json:"cached_share"`
	CostUSD     float64 `json:"cost_usd"`
	DurationMS  int64   `json:"duration_ms"`
	// Output is the parsed answer of a run with --output-schema.
	Output any `json:"output,omitempty"`
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, cont bool) error {
	f, goal, err := parseRunFlags(args, stderr, cont)
	if err != nil {
		return err
	}
	log := logrus.New()
	log.SetOutput(stderr)
	log.SetLevel(logrus.WarnLevel)

	cfg, warnings, err := config.Load(config.Options{Flags: config.Flags{Model: f.model, BaseURL: f.baseURL, MaxIterations: f.maxIter}})
	if err != nil {
		return withCode(exitSetup, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "odek: warning:", w.String())
	}
	if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
		return withCode(exitSetup, err)
	}
	// telemetry (issue 24): continue TRACEPARENT; spans only with OTEL_*.
	ctx, endTrace, err := startTracing(ctx, "odek", "odek run", log)
	if err != nil {
		return withCode(exitSetup, err)
	}
	defer endTrace()
	var schema *outschema.Schema // issue 28: --output-schema (host.RunSpec.OutputSchema)
	if f.outputSchema != "" {
		if f.outputRepairs < 0 || f.outputRepairs > outschema.MaxRepairs {
			return usageErr("--output-repairs must be 0–%d, got %d", outschema.MaxRepairs, f.outputRepairs)
		}
		if schema, err = outschema.LoadFile(f.outputSchema); err != nil {
			return withCode(exitSetup, fmt.Errorf("--output-schema: %w", err))
		}
	}

	var sinks []events.Sink
	if f.eventsPath != "" {
		fsink, err := events.OpenFile(f.eventsPath, events.FileOptions{})
		if err != nil {
			return withCode(exitSetup, fmt.Errorf("--events-jsonl: %w", err))
		}
		defer fsink.Close()
		sinks = append(sinks, fsink)
	}
	if !f.quiet {
		sinks = append(sinks, &progressSink{w: stderr})
	}
	var sink events.Sink
	switch len(sinks) {
	case 0:
	case 1:
		sink = sinks[0]
	default:
		sink = events.Multi(sinks...)
	}
	sink = telemetry.EventSpans(ctx, sink) // telemetry (issue 24): model and tool spans from the run's events

	// The session comes first: its saved plan seeds the plan tool.
	var sess *session.Session
	store := &session.FileStore{Dir: filepath.Join(cfg.Home, "sessions")}
	if f.session || f.cont {
		if f.cont {
			if f.resumeID != "" {
				sess, err = store.Load(ctx, f.resumeID)
			} else {
				sess, err = store.Latest(ctx)
			}
			if err != nil {
				return withCode(exitSetup, fmt.Errorf("continue: %w", err))
			}
		} else {
			sess = session.New(cfg.Model, time.Now())
		}
		sess.ExternalRefs = session.MergeRefs(sess.ExternalRefs, f.refs, time.Now())
	}

	depth, err := subagent.DepthFromEnviron(os.Environ(), 0)
	if err != nil {
		return withCode(exitSetup, err)
	}
	confine := f.confine || cfg.Sandbox.Active(false)
	hopts := host.HostOptions{
		Warn:          func(w string) { fmt.Fprintln(stderr, "odek: warning:", w) },
		Logger:        log,
		Environ:       os.Environ(),
		Extensions:    true,
		ApproveMCP:    config.ApproveMCP(),
		ClientVersion: version,
		Confine:       confine,
	}
	var prompter agent.Prompter
	if p, ok := tools.NewTTYPrompter(); ok {
		prompter = p
		hopts.Prompter = p
	}
	h, err := host.New(ctx, cfg, hopts)
	if err != nil {
		return withCode(exitSetup, err)
	}
	defer h.Close()
	for _, r := range h.Extensions() {
		if !f.quiet || r.Status != ext.StatusLoaded {
			fmt.Fprintln(stderr, "odek: extension", r.String())
		}
	}
	spec := host.RunSpec{
		Goal: goal, Confine: confine, Sink: sink, EventsIncludeArgs: f.includeArgs, Prompter: prompter, Depth: depth,
		Budget: budget.Limits{
			MaxRuntime: f.maxRuntime, MaxToolCalls: f.maxToolCalls,
			MaxInputTokens: f.maxInputTok, MaxOutputTokens: f.maxOutputTok, MaxCostUSD: f.maxCostUSD,
		},
	}
	if sess != nil {
		fmt.Fprintln(stderr, "odek: session", sess.ID)
		spec.Session, spec.Store = sess, store
	}
	spec.OutputSchema, spec.OutputRepairs = schema, f.outputRepairs // issue 28: --output-schema
	oc, runErr := h.Run(ctx, spec)
	if errors.Is(runErr, host.ErrSetup) {
		return withCode(exitSetup, runErr)
	}
	for _, r := range oc.Extensions[min(len(h.Extensions()), len(oc.Extensions)):] { // this run's own (scope "job") servers
		if !f.quiet || r.Status != ext.StatusLoaded {
			fmt.Fprintln(stderr, "odek: extension", r.String())
		}
	}
	code := oc.ExitCode
	answer := oc.Answer
	if f.jsonOut {
		out := jsonResult{
			Status: oc.Status, Answer: answer, RunID: oc.RunID, SessionID: oc.SessionID, Iterations: oc.Iterations,
			Usage: oc.Usage, CachedShare: oc.Usage.CachedShare(), DurationMS: oc.Duration.Milliseconds(), CostUSD: oc.CostUSD, Error: oc.Error,
			Output: oc.Output,
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return withCode(exitError, err)
		}
		if runErr != nil {
			return withCode(code, errors.Join(errReported, runErr))
		}
		return nil
	}
	if runErr != nil {
		if answer != "" {
			fmt.Fprintln(stdout, answer)
		}
		if code == exitCancelled {
			return withCode(code, errors.New("cancelled"))
		}
		return withCode(code, errors.New(oc.Error))
	}
	fmt.Fprintln(stdout, answer)
	return nil
}

// progressSink renders a human-readable progress line per interesting
// event on stderr. It only ever sees redacted events.
type progressSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progressSink) Write(ev *events.Event) error {
	var line string
	d := ev.Data
	switch ev.Type {
	case events.ToolCallStarted:
		var s events.ToolCallStartedData
		s.Decode(d)
		line = fmt.Sprintf("· [%d] %s%s", ev.Iteration, ev.Tool, summaryText(s.ArgsSummary))
	case events.ToolCallProgress:
		line = progressLine(d)
	case events.ToolCallFailed:
		var f events.ToolCallFailedData
		f.Decode(d)
		line = fmt.Sprintf("✗ [%d] %s failed (%s)", ev.Iteration, ev.Tool, f.ErrorClass)
	case events.IterationCompleted:
		var it events.IterationCompletedData
		it.Decode(d)
		line = fmt.Sprintf("· iteration %d done: %d tool calls, tokens in %d / out %d", ev.Iteration, it.ToolsCalled, it.InputTokens, it.OutputTokens)
	case events.RunFailed:
		var f events.RunFailedData
		f.Decode(d)
		line = fmt.Sprintf("✗ run failed (%s) after %dms", f.ErrorClass, f.Duration.Milliseconds())
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := fmt.Fprintln(p.w, line)
	return err
}

// progressLine renders an MCP server's progress about a running call.
func progressLine(d map[string]any) string {
	var p ext.ToolProgress
	p.Decode(d)
	line := fmt.Sprintf("… %s: %v", p.Tool, p.Progress)
	if p.Total > 0 {
		line += fmt.Sprintf("/%v", p.Total)
	}
	if p.Message != "" {
		line += " " + p.Message
	}
	return line
}

func summaryText(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	var b strings.Builder
	for _, k := range []string{"argv0", "path", "host", "class"} {
		if x, ok := m[k]; ok {
			fmt.Fprintf(&b, " %s=%v", k, x)
		}
	}
	return b.String()
}

func cmdInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("odek init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "overwrite an existing config")
	if err := fs.Parse(args); err != nil {
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	home, err := config.HomeDir(nil)
	if err != nil {
		return withCode(exitSetup, err)
	}
	path := filepath.Join(home, config.OperatorFileName)
	if err := config.WriteStarter(path, *force); err != nil {
		return withCode(exitSetup, err)
	}
	fmt.Fprintln(stdout, "wrote", path)
	return nil
}
