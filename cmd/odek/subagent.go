package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
)

// maxAPIKeyBytes bounds what is read from --api-key-fd.
const maxAPIKeyBytes = 4 << 10

// cmdSubagent is `odek subagent --task FILE | --goal TEXT`: one focused
// task, one JSON result on stdout, exit codes 0/1/2/3/4. It never prompts.
func cmdSubagent(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	start := time.Now()
	report := func(code int, res *subagent.Result) error {
		if res.Artifacts == nil {
			res.Artifacts = []artifacts.RefSpec{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if werr := enc.Encode(res); werr != nil {
			return withCode(exitError, werr)
		}
		if code == exitOK {
			return nil
		}
		msg := res.Error
		if msg == "" {
			msg = res.Status
		}
		return withCode(code, errors.Join(errReported, errors.New(msg)))
	}
	setup := func(e error) error {
		fmt.Fprintln(stderr, "odek subagent:", e)
		return report(exitSetup, &subagent.Result{Status: subagent.StatusError, Error: e.Error(), Denials: []subagent.Denial{},
			DurationSeconds: time.Since(start).Seconds()})
	}
	defer func() {
		if p := recover(); p != nil {
			err = setup(fmt.Errorf("internal error (panic): %v", p))
		}
	}()

	fs := flag.NewFlagSet("odek subagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	taskPath := fs.String("task", "", "task file (JSON: goal, context, guidance, max_risk, artifact_root, model, base_url, budget)")
	goal := fs.String("goal", "", "run a quick task with this goal instead of a task file")
	keyFD := fs.Int("api-key-fd", -1, "read the API key from this inherited file descriptor (never from argv)")
	eventsPath := fs.String("events-jsonl", "", "append the odek.event/v1 stream to this file")
	if perr := fs.Parse(args); perr != nil {
		if errors.Is(perr, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, perr))
		}
		return setup(perr)
	}
	if (*taskPath == "") == (*goal == "") || fs.NArg() > 0 {
		return setup(errors.New("want exactly one of --task FILE or --goal TEXT, and no other arguments"))
	}
	var task subagent.Task
	if *taskPath != "" {
		raw, rerr := readCapped(*taskPath, subagent.MaxTaskBytes)
		if rerr != nil {
			return setup(rerr)
		}
		if task, err = subagent.ParseTask(raw); err != nil {
			return setup(err)
		}
	} else {
		task = subagent.Task{Goal: *goal}
		if err := task.Validate(); err != nil {
			return setup(err)
		}
	}
	apiKey := ""
	if *keyFD >= 0 {
		if apiKey, err = readKeyFD(*keyFD); err != nil {
			return setup(err)
		}
	}
	depth, err := subagent.DepthFromEnviron(os.Environ(), 1)
	if err != nil {
		return setup(err)
	}
	// An exhausted parent dimension is a hard cap of 0: fail before
	// anything starts.
	if berr := task.Budget.Exhausted(); berr != nil {
		return report(exitBudget, &subagent.Result{Status: subagent.StatusBudgetExhausted, Error: berr.Error(),
			Denials: []subagent.Denial{}, DurationSeconds: time.Since(start).Seconds()})
	}

	log := logrus.New()
	log.SetOutput(stderr)
	log.SetLevel(logrus.WarnLevel)
	// A confined child works in a chat's directory: an odek.json there is
	// the chat's, not a project's, and is not read.
	cfg, warnings, err := config.Load(config.Options{Flags: config.Flags{Model: task.Model, BaseURL: task.BaseURL}, NoProject: task.Confine != nil})
	if err != nil {
		return setup(err)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "odek subagent: warning:", w.String())
	}
	if apiKey != "" {
		cfg.APIKey = apiKey
	}
	if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
		return setup(err)
	}
	// telemetry (issue 24): continue the parent's TRACEPARENT; spans only with OTEL_*.
	ctx, endTrace, terr := startTracing(ctx, "odek", "odek subagent", log)
	if terr != nil {
		return setup(terr)
	}
	defer endTrace()
	var sink events.Sink
	if *eventsPath != "" {
		fsink, ferr := events.OpenFile(*eventsPath, events.FileOptions{})
		if ferr != nil {
			return setup(fmt.Errorf("--events-jsonl: %w", ferr))
		}
		defer fsink.Close()
		sink = fsink
	}
	sink = telemetry.EventSpans(ctx, sink) // telemetry (issue 24)
	workDir, err := os.Getwd()
	if err != nil {
		return setup(err)
	}
	var deny []string
	if c := task.Confine; c != nil {
		workDir, deny = c.Root, c.Deny
	}
	var inheritErr error
	h, err := host.New(ctx, cfg, host.HostOptions{
		Logger: log, Environ: os.Environ(), WorkDir: workDir,
		Warn:       func(w string) { fmt.Fprintln(stderr, "odek subagent: warning:", w) },
		Extensions: true, ApproveMCP: config.ApproveMCP(), ClientVersion: version,
		Confine: task.Confine != nil, SandboxDeny: deny,
	})
	if err != nil {
		return setup(err)
	}
	defer h.Close()
	rt, err := h.Prepare(ctx, host.RunSpec{
		WorkDir: workDir, Sink: sink, Depth: depth, MaxRisk: task.MaxRisk, Start: start, Confine: task.Confine != nil,
		Adjust: func(l *budget.Limits) { *l, inheritErr = task.Budget.Inherit(*l) },
	})
	if err != nil {
		return setup(err)
	}
	defer rt.Close()
	if inheritErr != nil {
		return report(exitBudget, &subagent.Result{Status: subagent.StatusBudgetExhausted, Error: inheritErr.Error(),
			Denials: []subagent.Denial{}, DurationSeconds: time.Since(start).Seconds()})
	}
	acfg := rt.Agent
	res := subagent.RunTask(rt.Context(ctx), subagent.RunOptions{Agent: acfg, Task: task, WorkDir: workDir, Start: start, Run: rt.RunAgent})
	return report(res.ExitCode(), res)
}

// readCapped reads at most limit bytes of path; a longer file is an error
// naming the limit.
func readCapped(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("task file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("task file: %w", err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: task file is larger than the limit of %d bytes", subagent.ErrInvalidTask, limit)
	}
	return b, nil
}

// readKeyFD reads the API key from an inherited descriptor and closes it.
func readKeyFD(fd int) (string, error) {
	f := os.NewFile(uintptr(fd), "api-key")
	if f == nil {
		return "", fmt.Errorf("--api-key-fd %d: not an open descriptor", fd)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAPIKeyBytes+1))
	if err != nil {
		return "", fmt.Errorf("--api-key-fd %d: %v", fd, err)
	}
	if len(b) > maxAPIKeyBytes {
		return "", fmt.Errorf("--api-key-fd %d: more than %d bytes", fd, maxAPIKeyBytes)
	}
	return strings.TrimSpace(string(b)), nil
}
