package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/odekrun/odek/queue"
	"io"
	"os"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/sirupsen/logrus"
)

// Outcomes of a doctor check.
const (
	checkOK   = "ok"
	checkWarn = "warn" // works, or not needed, but worth knowing
	checkFail = "fail" // a required part does not work
	checkSkip = "skip" // not configured, not needed
)

// doctorCheck is one line of `odek doctor`.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// doctorReport is `odek doctor --json`'s output.
type doctorReport struct {
	OK     bool          `json:"ok"`
	Checks []doctorCheck `json:"checks"`
}

// cmdDoctor checks what this machine gives odek: the kernel's Landlock
// and a live confined run, whether each surface confines its jobs, Redis,
// the model endpoint (one tiny request) and the extension servers. It
// exits 0 only when every required part works.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("odek doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object instead of lines")
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "Redis URL to check (env REDIS_URL; empty = skipped)")
	noModel := fs.Bool("no-model", false, "do not send the probe request to the model endpoint")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, err))
		}
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	if fs.NArg() > 0 {
		return usageErr("odek doctor takes no arguments, got %q", fs.Args())
	}
	var checks []doctorCheck
	add := func(name, status, format string, a ...any) {
		checks = append(checks, doctorCheck{Name: name, Status: status, Detail: fmt.Sprintf(format, a...)})
	}

	cfg, warnings, err := config.Load(config.Options{})
	if err != nil {
		add("config", checkFail, "%v", err)
		return doctorDone(stdout, *jsonOut, checks)
	}
	add("config", checkOK, "operator file %s, project file %s (%d warnings)", cfg.Layers.Operator.Path, cfg.Layers.Project.Path, len(warnings))

	// The kernel and a real confined process.
	abi := sandbox.ABI()
	settings := cfg.Sandbox
	switch {
	case abi < sandbox.RequiredABI && settings.Active(true):
		add("landlock", checkFail, "%v", host.CheckSandbox(abi))
	case abi < sandbox.RequiredABI:
		add("landlock", checkWarn, "ABI %d, %d needed; the sandbox is off (sandbox.mode \"off\")", abi, sandbox.RequiredABI)
	default:
		add("landlock", checkOK, "ABI %d (%d needed)", abi, sandbox.RequiredABI)
	}
	if abi >= sandbox.RequiredABI {
		vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := sandbox.Verify(vctx)
		cancel()
		switch {
		case err == nil:
			add("sandbox", checkOK, "a confined process read its root and was refused a file outside it and a TCP connection")
		case settings.Active(true) || settings.Active(false):
			add("sandbox", checkFail, "%v", err)
		default:
			add("sandbox", checkWarn, "%v", err)
		}
	}
	onOff := func(b bool) string {
		if b {
			return "confined"
		}
		return "NOT confined"
	}
	status := checkOK
	if !settings.Active(true) {
		status = checkWarn
	}
	add("surfaces", status, "odek worker and odek-bot: %s; odek run: %s (--confine or sandbox.confine to confine it)",
		onOff(settings.Active(true)), onOff(settings.Active(false)))

	// Redis, when configured.
	if *redisURL == "" {
		add("redis", checkSkip, "no REDIS_URL: workers need one; odek-bot runs its own in-process workers without it")
	} else if ru, err := queue.ParseRedisURL(*redisURL); err != nil {
		add("redis", checkFail, "%v", err)
	} else {
		c := ru.NewClient()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		prefix := os.Getenv("ODEK_QUEUE_PREFIX")
		err := c.Ping(rctx).Err()
		var ti queue.TopologyInfo
		if err == nil {
			ti, err = queue.DescribeRedis(rctx, c, queue.KeyPrefix(prefix)+"jobs")
		}
		var legacy int64
		if err == nil {
			for _, k := range queue.LegacyKeys(prefix) { // one by one: different slots on a cluster
				n, _ := c.Exists(rctx, k).Result()
				legacy += n
			}
		}
		cancel()
		c.Close()
		switch {
		case err != nil:
			add("redis", checkFail, "%s: %v", ru, err)
		default:
			status := checkOK
			note := ""
			if ti.Mode != queue.ModeSingle && len(ti.Replicas) == 0 {
				status, note = checkWarn, "; no replica: a failover has nowhere to go"
			}
			masters := ""
			if ti.Mode == queue.ModeCluster {
				masters = fmt.Sprintf(" (%d masters; this one holds the queue's slot)", ti.Masters)
			}
			add("redis", status, "%s mode, master %s%s, replicas %v%s", ti.Mode, ti.Master, masters, ti.Replicas, note)
			if legacy > 0 {
				add("redis keys", checkWarn, "queue data in the old layout (no hash tag) found: stop the workers and the bot, run `odek queue migrate`")
			} else {
				add("redis keys", checkOK, "queue keys under the hash tag %s*: one cluster slot, every script declares its keys (cluster-safe)", queue.KeyPrefix(prefix))
			}
		}
	}

	// The model endpoint: one request of one token.
	if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
		add("model", checkFail, "%v", err)
	} else if *noModel {
		add("model", checkSkip, "%s, model %s: not probed (--no-model)", cfg.BaseURL, cfg.Model)
	} else if client, err := host.NewLLM(cfg); err != nil {
		add("model", checkFail, "%v", err)
	} else {
		mctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		start := time.Now()
		_, err := client.Complete(mctx, llm.Request{Model: cfg.Model, MaxTokens: 1,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: "Reply with the word ok."}}})
		cancel()
		if err != nil {
			add("model", checkFail, "%s, model %s: %v", cfg.BaseURL, cfg.Model, err)
		} else {
			add("model", checkOK, "%s, model %s answered in %s", cfg.BaseURL, cfg.Model, time.Since(start).Round(time.Millisecond))
		}
	}

	// Extension servers, started as a worker starts them.
	log := logrus.New()
	log.SetOutput(io.Discard)
	wd, _ := os.Getwd()
	// A required server that fails makes LoadExtensions fail: that is a
	// failed check; any other server that did not load is a warning.
	set, err := host.LoadExtensions(ctx, host.Options{Config: cfg, WorkDir: wd, Logger: log, Environ: os.Environ(),
		ClientVersion: version, ApproveMCP: config.ApproveMCP()})
	if err != nil {
		add("mcp", checkFail, "%v", err)
	} else {
		reports := set.Report()
		if len(reports) == 0 {
			add("mcp", checkSkip, "no mcp_servers configured")
		}
		for _, r := range reports {
			status := checkOK
			if r.Status != ext.StatusLoaded || len(r.Unapproved) > 0 {
				status = checkWarn
			}
			add("mcp "+r.Name, status, "%s", r.String())
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		_ = set.Close(cctx)
		cancel()
	}
	return doctorDone(stdout, *jsonOut, checks)
}

// doctorDone prints the report and sets the exit code: 0 when no check
// failed, 1 otherwise.
func doctorDone(stdout io.Writer, jsonOut bool, checks []doctorCheck) error {
	rep := doctorReport{OK: true, Checks: checks}
	for _, c := range checks {
		if c.Status == checkFail {
			rep.OK = false
		}
	}
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		for _, c := range checks {
			fmt.Fprintf(stdout, "%-5s %-16s %s\n", c.Status, c.Name, c.Detail)
		}
	}
	if !rep.OK {
		return withCode(exitError, errors.Join(errReported, errors.New("doctor: a required part does not work")))
	}
	return nil
}
