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

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/tools"
	"github.com/sirupsen/logrus"
)

type runFlags struct {
	model, baseURL, eventsPath string
	maxIter                    int
	includeArgs, jsonOut       bool
	quiet                      bool
}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, string, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("odek run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.model, "model", "", "model id (overrides config and ODEK_MODEL)")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible base URL, e.g. https://api.openai.com/v1")
	fs.IntVar(&f.maxIter, "max-iter", 0, "maximum model calls (default 90)")
	fs.StringVar(&f.eventsPath, "events-jsonl", "", "append the odek.event/v1 stream to this file (0600, synced per event)")
	fs.BoolVar(&f.includeArgs, "events-include-args", false, "add raw (redacted) tool arguments to tool_call_started events")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object with status, answer, usage… instead of the bare answer")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: odek run [flags] [--] <goal>")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, "", withCode(exitOK, errors.Join(errReported, err))
		}
		return nil, "", withCode(exitSetup, errors.Join(errReported, err))
	}
	if f.maxIter < 0 {
		return nil, "", usageErr("--max-iter must be ≥ 0, got %d", f.maxIter)
	}
	goal := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if goal == "" {
		return nil, "", usageErr("odek run needs a goal: odek run \"<goal>\"")
	}
	return f, goal, nil
}

// jsonResult is the --json output object.
type jsonResult struct {
	Status     string    `json:"status"` // success, error, budget_exhausted, canceled
	Answer     string    `json:"answer"`
	Error      string    `json:"error,omitempty"`
	RunID      string    `json:"run_id"`
	SessionID  string    `json:"session_id,omitempty"`
	Iterations int       `json:"iterations"`
	Usage      llm.Usage `json:"usage"`
	CostUSD    float64   `json:"cost_usd"`
	DurationMS int64     `json:"duration_ms"`
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, goal, err := parseRunFlags(args, stderr)
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

	red := redact.New()
	red.AddValue(cfg.APIKey)
	red.AddFromEnv(os.Environ())

	client, err := llm.New(llm.Config{
		BaseURL:          cfg.BaseURL,
		APIKey:           cfg.APIKey,
		DisableStreaming: !cfg.LLM.Stream,
		MaxAttempts:      cfg.LLM.MaxAttempts,
		IdleTimeout:      cfg.LLM.IdleTimeout(),
		RequestTimeout:   cfg.LLM.RequestTimeout(),
	})
	if err != nil {
		return withCode(exitSetup, err)
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

	wd, err := os.Getwd()
	if err != nil {
		return withCode(exitSetup, err)
	}
	acfg := agent.Config{
		LLM:                client,
		Model:              cfg.Model,
		SystemPrompt:       cfg.SystemPrompt,
		Tools:              tools.Builtins(tools.Options{WorkDir: wd, ShellTimeout: cfg.Tools.ShellTimeout()}),
		Policy:             policyFrom(cfg.Dangerous),
		MaxIterations:      cfg.MaxIterations,
		MaxToolParallel:    cfg.MaxToolParallel,
		MaxToolOutputBytes: cfg.Tools.MaxOutputBytes,
		EventSink:          sink,
		EventsIncludeArgs:  f.includeArgs,
		Redactor:           red,
		Logger:             log,
	}
	if p, ok := tools.NewTTYPrompter(); ok {
		acfg.Prompter = p
	}
	res, runErr := agent.Run(ctx, acfg, goal)

	status, code := "success", exitOK
	switch {
	case runErr == nil:
	case errors.Is(runErr, context.Canceled):
		status, code = "canceled", exitCancelled
	default:
		status, code = "error", exitError
	}
	answer := red.String(res.Answer)
	if f.jsonOut {
		out := jsonResult{
			Status: status, Answer: answer, RunID: res.RunID, Iterations: res.Iterations,
			Usage: res.Usage, DurationMS: res.Duration.Milliseconds(),
		}
		if runErr != nil {
			out.Error = red.String(runErr.Error())
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
		return withCode(code, errors.New(red.String(runErr.Error())))
	}
	fmt.Fprintln(stdout, answer)
	return nil
}

func policyFrom(d config.Dangerous) tools.Policy {
	p := tools.DefaultPolicy()
	for class, action := range d.Classes {
		p.Classes[tools.Class(class)] = tools.Action(action)
	}
	if d.NonInteractive != "" {
		p.NonInteractive = tools.Action(d.NonInteractive)
	}
	return p
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
		line = fmt.Sprintf("· [%d] %s%s", ev.Iteration, ev.Tool, summaryText(d["args_summary"]))
	case events.ToolCallFailed:
		line = fmt.Sprintf("✗ [%d] %s failed (%v)", ev.Iteration, ev.Tool, d["error_class"])
	case events.IterationCompleted:
		line = fmt.Sprintf("· iteration %d done: %v tool calls, tokens in %v / out %v", ev.Iteration, d["tools_called"], d["input_tokens"], d["output_tokens"])
	case events.RunFailed:
		line = fmt.Sprintf("✗ run failed (%v) after %vms", d["error_class"], d["duration_ms"])
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := fmt.Fprintln(p.w, line)
	return err
}

func summaryText(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
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
