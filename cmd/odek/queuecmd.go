package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/outschema"
	"github.com/odekrun/odek/internal/redact"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/schedule"
	"github.com/odekrun/odek/worker"
	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// exitUnavailable is the exit code of a command that could not reach Redis
// (sysexits' EX_UNAVAILABLE): retry later, or check the address.
const exitUnavailable = 69

// queueSub is one `odek queue` subcommand: its usage lines, its flags, the
// check of its arguments (before connecting) and what it does. Every
// subcommand also takes the connection flags and --json.
type queueSub struct {
	name string
	// usage is the subcommand's line(s) of queueUsage, without the
	// leading "  odek queue ".
	usage string
	// flags registers the subcommand's own flags into a; nil ⇒ none.
	flags func(fs *flag.FlagSet, a *queueArgs)
	// args checks the positional arguments and returns the one the
	// subcommand uses (a goal or a job id); nil ⇒ none allowed.
	args func(a *queueArgs, rest []string) (string, error)
	// run does it: with the connected queue, or, for migrate, c.q nil.
	run func(ctx context.Context, c *queueCLI, arg string) error
	// noConnect: run connects by itself (migrate).
	noConnect bool
}

// queueSubs are the subcommands, in the order of the usage text.
var queueSubs = []queueSub{
	{name: "stats", usage: "stats                                 queued (all, also behind a busy chat), ready, suspects, running per worker, oldest queued, dead, unread results",
		run: func(ctx context.Context, c *queueCLI, _ string) error { return c.stats(ctx) }},
	{name: "show", usage: "show ID                               one job: state, worker, lease left, attempts and why each ended, result",
		args: oneJobID("show"), run: func(ctx context.Context, c *queueCLI, id string) error { return c.show(ctx, id) }},
	{name: "submit", usage: "submit --chat ID [--key K] [--wait] [--output-schema F | --kind compact] \"<goal>\"\n                                                   enqueue a goal; with --wait print the answer and exit as odek run would",
		flags: func(fs *flag.FlagSet, a *queueArgs) {
			fs.Int64Var(&a.chat, "chat", 0, "chat id the job belongs to (required; jobs of one chat run one at a time, in order)")
			fs.Int64Var(&a.user, "user", 0, "user id (optional)")
			fs.StringVar(&a.sessionID, "session", "", "session to continue (default: the chat's)")
			fs.StringVar(&a.idemKey, "key", "", "idempotency key: a second submit with the same key within the dedupe window is the same job")
			fs.StringVar(&a.budgetJSON, "budget", "", `job budget as a limits JSON object, e.g. {"max_tool_calls":5} (may only lower the workers' limits)`)
			fs.BoolVar(&a.wait, "wait", false, "wait for the result, print the answer on stdout and exit with the run's exit code")
			fs.DurationVar(&a.timeout, "timeout", 0, "with --wait: give up after this long (exit 2; the job goes on); 0 waits forever")
			fs.StringVar(&a.outputSchema, "output-schema", "", "JSON Schema file the answer must be valid against (as odek run --output-schema; the job fails with exit code 5 otherwise)")
			fs.IntVar(&a.outputRepairs, "output-repairs", outschema.DefaultRepairs, "with --output-schema: corrective turns after an invalid answer (at most 5)")
			fs.StringVar(&a.kind, "kind", "", `"compact": fold the chat's older conversation (--session, else the chat's) into its digest on a worker, with the worker's model; no goal needed`)
		},
		args: func(a *queueArgs, rest []string) (string, error) {
			goal := strings.TrimSpace(strings.Join(rest, " "))
			if a.chat == 0 {
				return "", usageErr("odek queue submit needs --chat ID (a non-zero chat id)")
			}
			switch a.kind {
			case "":
			case queue.KindCompact:
				if goal != "" || a.outputSchema != "" {
					return "", usageErr("odek queue submit --kind compact takes no goal and no --output-schema: it compacts the conversation of --session (else the chat's)")
				}
				return "/compact", nil
			default:
				return "", usageErr("odek queue submit --kind %q: want %q (or no --kind)", a.kind, queue.KindCompact)
			}
			if goal == "" {
				return "", usageErr(`odek queue submit needs a goal: odek queue submit --chat ID "<goal>"`)
			}
			if a.budgetJSON != "" {
				if _, err := parseBudget(a.budgetJSON); err != nil {
					return "", usageErr("%v", err)
				}
			}
			if a.outputSchema != "" {
				if a.outputRepairs < 0 || a.outputRepairs > outschema.MaxRepairs {
					return "", usageErr("--output-repairs must be 0–%d, got %d", outschema.MaxRepairs, a.outputRepairs)
				}
				s, err := outschema.LoadFile(a.outputSchema)
				if err != nil {
					return "", withCode(exitSetup, fmt.Errorf("--output-schema: %w", err))
				}
				if len(s.Raw) > queue.MaxOutputSchemaBytes {
					return "", withCode(exitSetup, fmt.Errorf("--output-schema: %s is %d bytes; a queued job's schema is at most %d", a.outputSchema, len(s.Raw), queue.MaxOutputSchemaBytes))
				}
				a.schema = s.Raw
			}
			return goal, nil
		},
		run: func(ctx context.Context, c *queueCLI, goal string) error { return c.submit(ctx, goal) }},
	{name: "cancel", usage: "cancel ID                             cancel a queued or running job",
		args: oneJobID("cancel"), run: func(ctx context.Context, c *queueCLI, id string) error { return c.cancel(ctx, id) }},
	{name: "dead", usage: "dead [--max N]                        list dead-lettered jobs",
		flags: func(fs *flag.FlagSet, a *queueArgs) {
			fs.Int64Var(&a.maxDead, "max", 0, "list at most this many (0: all)")
		},
		run: func(ctx context.Context, c *queueCLI, _ string) error { return c.dead(ctx) }},
	{name: "retry", usage: "retry ID | --all [--yes]              requeue dead jobs as new jobs (--all asks first unless --yes)",
		flags: func(fs *flag.FlagSet, a *queueArgs) {
			fs.BoolVar(&a.all, "all", false, "retry every dead-lettered job")
			fs.BoolVar(&a.yes, "yes", false, "with --all: do not ask for confirmation")
		},
		args: func(a *queueArgs, rest []string) (string, error) {
			switch {
			case a.all && len(rest) != 0:
				return "", usageErr("odek queue retry takes either one job id or --all, not both")
			case !a.all && len(rest) != 1:
				return "", usageErr("odek queue retry needs exactly one job id, or --all")
			case a.yes && !a.all:
				return "", usageErr("--yes only goes with --all")
			}
			if a.all {
				return "", nil
			}
			return rest[0], nil
		},
		run: func(ctx context.Context, c *queueCLI, id string) error {
			if c.a.all {
				return c.retryAll(ctx)
			}
			return c.retry(ctx, id)
		}},
	{name: "purge-dead", usage: "purge-dead --older-than D             delete dead letters older than D (e.g. 72h)",
		flags: func(fs *flag.FlagSet, a *queueArgs) {
			fs.DurationVar(&a.olderThan, "older-than", -1, "delete dead letters older than this (required, e.g. 72h; 0 deletes all)")
		},
		args: func(a *queueArgs, rest []string) (string, error) {
			if a.olderThan < 0 {
				return "", usageErr("odek queue purge-dead needs --older-than D (e.g. 72h; 0 deletes every dead letter)")
			}
			return noArgs("purge-dead")(a, rest)
		},
		run: func(ctx context.Context, c *queueCLI, _ string) error { return c.purgeDead(ctx) }},
	{name: "workers", usage: "workers                               live workers: name, version, concurrency, running jobs, last heartbeat",
		run: func(ctx context.Context, c *queueCLI, _ string) error { return c.workers(ctx) }},
	{name: "tail", usage: "tail [ID]                             follow the progress of one job (until it ends) or of all running jobs",
		args: func(_ *queueArgs, rest []string) (string, error) {
			if len(rest) > 1 {
				return "", usageErr("odek queue tail takes at most one job id")
			}
			if len(rest) == 0 {
				return "", nil
			}
			return rest[0], nil
		},
		run: func(ctx context.Context, c *queueCLI, id string) error { return c.tail(ctx, id) }},
	{name: "config", usage: "config [--lease D] [--max-attempts N] show or set the lease and max attempts every worker uses",
		flags: func(fs *flag.FlagSet, a *queueArgs) {
			fs.DurationVar(&a.lease, "lease", 0, "set the lease of a claimed job without heartbeat before another worker takes it over")
			fs.IntVar(&a.maxAttempts, "max-attempts", 0, "set the deaths of a job's worker, while the job ran alone, before it is dead-lettered")
		},
		args: func(a *queueArgs, rest []string) (string, error) {
			if _, err := noArgs("config")(a, rest); err != nil {
				return "", err
			}
			if a.lease < 0 || a.maxAttempts < 0 || (a.lease > 0 && a.lease < 100*time.Millisecond) {
				return "", usageErr("odek queue config: --lease must be ≥ 100ms and --max-attempts ≥ 1 when given")
			}
			return "", nil
		},
		run: func(ctx context.Context, c *queueCLI, _ string) error { return c.config(ctx) }},
	{name: "migrate", usage: `migrate                               move queue keys of the old layout ("odek:jobs") to the hash-tagged one ("{odek}:jobs"); idempotent, run with workers and bot stopped`,
		noConnect: true},
	queueBackupSub,
}

// queueUsage is `odek queue`'s help, built from queueSubs (when asked
// for: a package-level string built by a call would be made at the start
// of every odek process, `odek run` included).
func queueUsage() string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, s := range queueSubs {
		b.WriteString("  odek queue " + s.usage + "\n")
	}
	b.WriteString(`Every subcommand takes --redis URL (env REDIS_URL), --prefix and --json (one JSON value per line on stdout).
--store PATH works on odek-bot's embedded store ($ODEK_HOME/store.db) instead of Redis, while the bot
is stopped (stats, show, submit without --wait, cancel, dead, retry, purge-dead, backup); while it runs
the same commands go through the store's admin socket (store.db.sock) and the bot applies them at once.
Exit codes: 0 ok, 1 the job or the request failed, 3 bad flags or arguments, 69 Redis unreachable.
`)
	return b.String()
}

// oneJobID is the argument check of a subcommand that takes one job id.
func oneJobID(sub string) func(*queueArgs, []string) (string, error) {
	return func(_ *queueArgs, rest []string) (string, error) {
		if len(rest) != 1 {
			return "", usageErr("odek queue %s needs exactly one job id", sub)
		}
		return rest[0], nil
	}
}

// noArgs is the argument check of a subcommand that takes none.
func noArgs(sub string) func(*queueArgs, []string) (string, error) {
	return func(_ *queueArgs, rest []string) (string, error) {
		if len(rest) > 0 {
			return "", usageErr("odek queue %s takes no arguments, got %q", sub, rest)
		}
		return "", nil
	}
}

// queueArgs are the parsed flags of one `odek queue` subcommand.
type queueArgs struct {
	jsonOut, wait, all, yes bool
	chat, user              int64
	sessionID, idemKey      string
	maxDead                 int64
	timeout, olderThan      time.Duration
	lease                   time.Duration
	maxAttempts             int
	budgetJSON              string
	outputSchema            string // submit --output-schema FILE
	outputRepairs           int
	schema                  []byte // its document, loaded and compiled by submit's args check
	kind                    string // submit --kind (queue.Job.Kind)
}

// cmdQueue is the operator CLI of the Redis queue.
func cmdQueue(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, queueUsage())
		return withCode(exitSetup, errors.Join(errReported, errors.New("odek queue needs a subcommand")))
	}
	sub, args := args[0], args[1:]
	if sub == "-h" || sub == "--help" || sub == "help" {
		fmt.Fprint(stdout, queueUsage())
		return nil
	}
	i := slices.IndexFunc(queueSubs, func(s queueSub) bool { return s.name == sub })
	if i < 0 {
		fmt.Fprint(stderr, queueUsage())
		return usageErr("unknown queue subcommand %q", sub)
	}
	cmd := queueSubs[i]
	var qf queueFlags
	env, err := workerEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("odek queue "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	qf.registerConn(fs, env)
	var a queueArgs
	var storePath string
	fs.StringVar(&storePath, "store", "", "work on odek-bot's embedded store at this path ($ODEK_HOME/store.db) instead of Redis (while the bot runs, through its admin socket)")
	fs.BoolVar(&a.jsonOut, "json", false, "print JSON (one value per line) instead of text")
	if cmd.flags != nil {
		cmd.flags(fs, &a)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, err))
		}
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	// Validate the arguments before connecting.
	check := cmd.args
	if check == nil {
		check = noArgs(sub)
	}
	arg, err := check(&a, fs.Args())
	if err != nil {
		return err
	}
	if sub == "submit" && a.idemKey == "" {
		fmt.Fprintln(stderr, "odek: warning: no --key given; if this submit is retried (a timeout, a script run twice) the goal is enqueued twice")
	}

	// go-redis' own log lines go through logrus; this command reports
	// Redis errors itself, so only its errors are shown.
	rlog := logrus.New()
	rlog.SetOutput(stderr)
	rlog.SetLevel(logrus.ErrorLevel)
	redis.SetLogger(worker.RedisLogger{Log: rlog})
	if sub == queueBackupSub.name {
		return queueBackup(ctx, storePath, arg, a.jsonOut, stdout) // queuebackup.go
	}
	var c *queueCLI
	if storePath != "" {
		switch {
		case sub == "workers" || sub == "tail" || sub == "config" || cmd.noConnect:
			return usageErr("odek queue %s does not apply to the embedded store (--store): it has no separate workers", sub)
		case a.wait:
			return usageErr("odek queue submit --wait does not go with --store: the job runs when odek-bot starts")
		}
		// queuestore.go: the store itself, or the running bot's socket.
		var done func()
		c, done, err = openStoreCLI(ctx, sub, storePath, queueCLI{addr: storePath, what: "odek queue " + sub, a: a, stdin: stdin, stdout: stdout, stderr: stderr})
		if err != nil {
			return err
		}
		defer done()
	} else {
		if cmd.noConnect {
			return migrateQueue(ctx, &qf, a.jsonOut, stdout)
		}
		rc, q, err := qf.connect(ctx, "odek queue "+sub, qf.optionsDefault())
		if err != nil {
			return err
		}
		defer rc.Close()
		c = &queueCLI{q: q, addr: queue.ClientAddr(rc), what: "odek queue " + sub, a: a, stdin: stdin, stdout: stdout, stderr: stderr, prefix: qf.prefix}
	}
	return cmd.run(ctx, c, arg)
}

// cliQueue is what the subcommands use of a queue: *queue.Redis, or the
// embedded store with --store.
type cliQueue interface {
	queue.Queue
	queue.Operator
	queue.Inspector
}

// queueCLI runs one subcommand against a connected queue.
type queueCLI struct {
	q              cliQueue
	admin          *estore.Admin // set: a running bot's admin socket, and q is nil (queuestore.go)
	addr, what     string
	prefix         string
	a              queueArgs
	stdin          io.Reader
	stdout, stderr io.Writer
}

// fail maps a queue error to an exit code and a message naming Redis'
// address and the cause.
func (c *queueCLI) fail(err error) error {
	if c.admin != nil { // queuestore.go: a running odek-bot's admin socket
		return adminErr(c.what, c.addr, err)
	}
	return redisErr(c.what, c.addr, err)
}

func (c *queueCLI) json(v any) error {
	if err := json.NewEncoder(c.stdout).Encode(v); err != nil {
		return withCode(exitError, err)
	}
	return nil
}

func (c *queueCLI) cancel(ctx context.Context, id string) error {
	if err := c.writer().Cancel(ctx, id); errors.Is(err, queue.ErrNotFound) {
		return withCode(exitError, fmt.Errorf("job %q is unknown or already finished", id))
	} else if err != nil {
		return c.fail(err)
	}
	if c.a.jsonOut {
		return c.json(map[string]any{"job_id": id, "cancel_requested": true})
	}
	return nil
}

func (c *queueCLI) submit(ctx context.Context, goal string) error {
	a := c.a
	job := queue.Job{ChatID: a.chat, UserID: a.user, Goal: goal, SessionID: a.sessionID, IdempotencyKey: a.idemKey, Kind: a.kind}
	if a.schema != nil {
		repairs := a.outputRepairs
		job.OutputSchema, job.OutputRepairs = a.schema, &repairs
	}
	if a.budgetJSON != "" {
		b, err := parseBudget(a.budgetJSON)
		if err != nil {
			return withCode(exitSetup, err)
		}
		job.Budget = b
	}
	// telemetry (issue 24): the job carries the trace (a TRACEPARENT this
	// command was given, or its own span), so the worker's spans join it.
	ctx, endTrace, terr := startTracing(ctx, "odek", "odek queue submit", nil)
	if terr != nil {
		return withCode(exitSetup, terr)
	}
	defer endTrace()
	job.Trace = telemetry.ToMap(ctx)
	stored, dup, err := c.writer().Enqueue(ctx, job)
	if err != nil {
		if errors.Is(err, queue.ErrInvalidJob) || errors.Is(err, queue.ErrPayloadTooLarge) {
			return withCode(exitSetup, err)
		}
		return c.fail(err)
	}
	if dup {
		fmt.Fprintf(c.stderr, "odek: idempotency key %q was already used: job %s\n", a.idemKey, stored.ID)
	}
	if !a.wait {
		if a.jsonOut {
			return c.json(map[string]any{"job_id": stored.ID, "duplicate": dup})
		}
		fmt.Fprintln(c.stdout, stored.ID)
		return nil
	}
	fmt.Fprintln(c.stderr, "odek: job", stored.ID)
	wctx := ctx
	if a.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	res, err := waitJobResult(wctx, c.q, stored.ID)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return withCode(exitTimeout, fmt.Errorf("no result for job %s within --timeout %v (the job goes on)", stored.ID, a.timeout))
	case err != nil && ctx.Err() != nil:
		return withCode(exitCancelled, fmt.Errorf("stopped waiting for job %s (the job goes on; odek queue cancel %s stops it)", stored.ID, stored.ID))
	case err != nil:
		return c.fail(err)
	}
	if a.jsonOut {
		if err := c.json(res); err != nil {
			return err
		}
		if code := resultCode(res); code != exitOK {
			return withCode(code, errors.Join(errReported, fmt.Errorf("job %s %s", res.JobID, res.Status)))
		}
		return nil
	}
	return printResult(c.stdout, c.stderr, res)
}

// waitJobResult follows the job's progress stream (which wakes it when the
// run ends) and looks the result up after every wake-up or 500 ms.
func waitJobResult(ctx context.Context, q cliQueue, id string) (queue.Result, error) {
	after := ""
	for {
		res, ok, err := q.JobResult(ctx, id)
		if err != nil && ctx.Err() == nil {
			return res, err
		}
		if ok {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return queue.Result{}, err
		}
		ps, err := q.ReadProgress(ctx, id, after, 100, 500*time.Millisecond)
		if err == nil && len(ps) > 0 {
			after = ps[len(ps)-1].ID
		}
	}
}

// resultCode maps a job result to the exit code `odek run` would give.
func resultCode(res queue.Result) int {
	switch res.Status {
	case queue.StatusSucceeded:
		return exitOK
	case queue.StatusCanceled:
		return exitCancelled
	}
	if res.ExitCode != 0 {
		return res.ExitCode
	}
	return exitError
}

func printResult(stdout, stderr io.Writer, res queue.Result) error {
	if res.Answer != "" {
		fmt.Fprintln(stdout, res.Answer)
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(stderr, "odek: artifact %s (%d bytes)\n", a.Path, a.Bytes)
	}
	code := resultCode(res)
	if code == exitOK {
		return nil
	}
	msg := res.Error
	if msg == "" {
		msg = string(res.Status)
	}
	return withCode(code, fmt.Errorf("job %s %s: %s", res.JobID, res.Status, msg))
}

// statsJSON is the --json form of `odek queue stats`.
type statsJSON struct {
	Queued          int64            `json:"queued"`
	Ready           int64            `json:"ready"`
	Suspects        int64            `json:"suspects"`
	Running         int64            `json:"running"`
	RunningBy       map[string]int64 `json:"running_by"`
	OldestQueuedAge float64          `json:"oldest_queued_age_seconds"`
	Dead            int64            `json:"dead"`
	Results         int64            `json:"results"`
	// Schedules are the schedules beside the queue (issue 27); absent when
	// they cannot be counted.
	Schedules *schedule.Counts `json:"schedules,omitempty"`
}

func (c *queueCLI) stats(ctx context.Context) error {
	st, err := c.reader().Stats(ctx)
	if err != nil {
		return c.fail(err)
	}
	var age time.Duration
	if !st.OldestQueued.IsZero() {
		age = max(time.Since(st.OldestQueued), 0)
	}
	sc := c.scheduleCounts(ctx)
	if c.a.jsonOut {
		return c.json(statsJSON{Queued: st.Queued, Ready: st.Ready, Suspects: st.Suspects, Running: st.Running, RunningBy: st.RunningBy,
			OldestQueuedAge: age.Seconds(), Dead: st.Dead, Results: st.Results, Schedules: sc})
	}
	w := c.stdout
	fmt.Fprintf(w, "queued\t%d\t(all waiting jobs, also behind a busy chat)\nready\t%d\t(heads of their chat)\nsuspects\t%d\t(waiting to run alone after a worker died)\nrunning\t%d\n",
		st.Queued, st.Ready, st.Suspects, st.Running)
	if age > 0 {
		fmt.Fprintf(w, "oldest queued\t%s\n", age.Round(time.Second))
	}
	fmt.Fprintf(w, "dead\t%d\nresults\t%d\t(not yet read by a front end)\n", st.Dead, st.Results)
	if sc != nil {
		fmt.Fprintf(w, "schedules\t%d\t(%d enabled, %d fires being enqueued)\n", sc.Schedules, sc.Enabled, sc.Pending)
	}
	names := make([]string, 0, len(st.RunningBy))
	for n := range st.RunningBy {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "worker %s\t%d running\n", n, st.RunningBy[n])
	}
	return nil
}

// goalLine is a goal's first line, redacted and clipped, for display.
func goalLine(goal string, n int) string {
	line, _, _ := strings.Cut(goal, "\n")
	r := redact.New()
	r.AddFromEnv(os.Environ())
	return clipGoal(r.String(line), n)
}

// showJSON is the --json form of `odek queue show`.
type showJSON struct {
	ID              string             `json:"id"`
	State           string             `json:"state"`
	ChatID          int64              `json:"chat_id"`
	Goal            string             `json:"goal"`
	CreatedAt       time.Time          `json:"created_at"`
	Worker          string             `json:"worker,omitempty"`
	Since           *time.Time         `json:"since,omitempty"`
	LeaseLeft       *float64           `json:"lease_left_seconds,omitempty"`
	Attempt         int                `json:"attempt"`
	Strikes         int                `json:"strikes"`
	Suspect         bool               `json:"suspect"`
	Attempts        []queue.AttemptEnd `json:"attempts"`
	WaitingApproval string             `json:"waiting_approval,omitempty"`
	Result          *resultSummary     `json:"result,omitempty"`
}

type resultSummary struct {
	Status     queue.Status `json:"status"`
	Summary    string       `json:"summary,omitempty"`
	Error      string       `json:"error,omitempty"`
	Artifacts  int          `json:"artifacts"`
	DurationMS int64        `json:"duration_ms,omitempty"`
	Usage      queue.Usage  `json:"usage"`
}

func (c *queueCLI) show(ctx context.Context, id string) error {
	info, ok, err := c.reader().Inspect(ctx, id)
	if err != nil {
		return c.fail(err)
	}
	if !ok {
		return withCode(exitError, fmt.Errorf("no job %q (unknown, or finished more than the retention ago)", id))
	}
	out := showJSON{ID: info.Job.ID, State: info.State, ChatID: info.Job.ChatID, Goal: goalLine(info.Job.Goal, 120), CreatedAt: info.Job.CreatedAt,
		Worker: info.Worker, Attempt: info.Attempt, Strikes: info.Strikes, Suspect: info.Suspect, Attempts: info.History,
		WaitingApproval: info.WaitingApproval}
	if out.Attempts == nil {
		out.Attempts = []queue.AttemptEnd{}
	}
	if !info.Since.IsZero() {
		out.Since = &info.Since
	}
	if info.State == queue.StateRunning {
		s := info.LeaseLeft.Seconds()
		out.LeaseLeft = &s
	}
	if r := info.Result; r != nil {
		out.Result = &resultSummary{Status: r.Status, Summary: goalLine(r.Answer, 200), Error: clipGoal(r.Error, 300), Artifacts: len(r.Artifacts), DurationMS: r.DurationMS, Usage: r.Usage}
		if r.Attempt > 0 {
			out.Attempts = append(out.Attempts, queue.AttemptEnd{Attempt: r.Attempt, Worker: info.Worker, Reason: "finished: " + string(r.Status)})
		}
	}
	if c.a.jsonOut {
		return c.json(out)
	}
	w := c.stdout
	state := out.State
	switch {
	case info.State == queue.StateRunning && info.WaitingApproval != "":
		state = "running, waiting for approval " + info.WaitingApproval
	case info.State == queue.StateRunning && info.Suspect:
		state = "running alone (suspect: its previous worker died)"
	}
	fmt.Fprintf(w, "job\t%s\nstate\t%s\nchat\t%d\ngoal\t%s\ncreated\t%s\n", out.ID, state, out.ChatID, out.Goal, out.CreatedAt.Format(time.RFC3339))
	if info.State == queue.StateRunning {
		fmt.Fprintf(w, "worker\t%s\nsince\t%s (%s ago)\nlease left\t%s\n", out.Worker, info.Since.Format(time.RFC3339), time.Since(info.Since).Round(time.Millisecond), info.LeaseLeft.Round(time.Millisecond))
	} else if out.Since != nil {
		fmt.Fprintf(w, "since\t%s\n", out.Since.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "attempts\t%d (deaths alone: %d)\n", out.Attempt, out.Strikes)
	for _, e := range out.Attempts {
		fmt.Fprintf(w, "  attempt %d\t%s\t%s\n", e.Attempt, e.Worker, e.Reason)
	}
	if r := out.Result; r != nil {
		fmt.Fprintf(w, "result\t%s\n", r.Status)
		if r.Summary != "" {
			fmt.Fprintf(w, "answer\t%s\n", r.Summary)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "error\t%s\n", r.Error)
		}
		fmt.Fprintf(w, "artifacts\t%d\ntokens\t%d in, %d out\n", r.Artifacts, r.Usage.PromptTokens, r.Usage.CompletionTokens)
	}
	return nil
}

// deadJSON is one line of `odek queue dead --json`.
type deadJSON struct {
	ID        string             `json:"id"`
	ChatID    int64              `json:"chat_id"`
	Goal      string             `json:"goal"`
	CreatedAt time.Time          `json:"created_at"`
	DeadAt    time.Time          `json:"dead_at"`
	Attempts  int                `json:"attempts"`
	Strikes   int                `json:"strikes"`
	History   []queue.AttemptEnd `json:"history,omitempty"`
}

func (c *queueCLI) dead(ctx context.Context) error {
	ds, err := c.reader().DeadEntries(ctx, c.a.maxDead)
	if err != nil {
		return c.fail(err)
	}
	for _, d := range ds {
		j := d.Job
		if c.a.jsonOut {
			if err := c.json(deadJSON{ID: j.ID, ChatID: j.ChatID, Goal: goalLine(j.Goal, 120), CreatedAt: j.CreatedAt, DeadAt: d.At, Attempts: j.Attempt, Strikes: d.Strikes, History: d.History}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(c.stdout, "%s\tchat=%d\tattempts=%d\tdied=%s\t%s\n", j.ID, j.ChatID, j.Attempt, d.At.Format(time.RFC3339), goalLine(j.Goal, 60))
	}
	if len(ds) == 0 && !c.a.jsonOut {
		fmt.Fprintln(c.stderr, "no dead-lettered jobs")
	}
	return nil
}

func (c *queueCLI) retry(ctx context.Context, id string) error {
	j, err := c.writer().Retry(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return withCode(exitError, fmt.Errorf("no dead-lettered job %q (odek queue dead lists them)", id))
	}
	if err != nil {
		return c.fail(err)
	}
	if c.a.jsonOut {
		return c.json(map[string]string{"dead_id": id, "job_id": j.ID})
	}
	fmt.Fprintln(c.stdout, j.ID)
	return nil
}

func (c *queueCLI) retryAll(ctx context.Context) error {
	ds, err := c.reader().DeadEntries(ctx, 0)
	if err != nil {
		return c.fail(err)
	}
	if len(ds) == 0 {
		fmt.Fprintln(c.stderr, "no dead-lettered jobs")
		return nil
	}
	if !c.a.yes {
		fmt.Fprintf(c.stderr, "Retry all %d dead-lettered jobs (each runs again as a new job)? [y/N] ", len(ds))
		line, _ := bufio.NewReader(c.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return withCode(exitError, errors.New("not confirmed; nothing retried (pass --yes to skip the question)"))
		}
	}
	var failed int
	for _, d := range ds {
		j, err := c.writer().Retry(ctx, d.Job.ID)
		switch {
		case errors.Is(err, queue.ErrNotFound):
			continue // retried or purged by someone else meanwhile
		case err != nil && queue.Unreachable(err):
			return c.fail(err)
		case err != nil:
			failed++
			fmt.Fprintf(c.stderr, "odek: retry %s: %v\n", d.Job.ID, err)
			continue
		}
		if c.a.jsonOut {
			if err := c.json(map[string]string{"dead_id": d.Job.ID, "job_id": j.ID}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(c.stdout, "%s\t%s\n", d.Job.ID, j.ID)
		}
	}
	if failed > 0 {
		return withCode(exitError, fmt.Errorf("%d of %d dead jobs could not be retried", failed, len(ds)))
	}
	return nil
}

func (c *queueCLI) purgeDead(ctx context.Context) error {
	n, err := c.writer().PurgeDead(ctx, c.a.olderThan)
	if err != nil {
		return c.fail(err)
	}
	if c.a.jsonOut {
		return c.json(map[string]int64{"purged": n})
	}
	fmt.Fprintf(c.stdout, "purged %d dead letters older than %s\n", n, c.a.olderThan)
	return nil
}

// workerJSON is one line of `odek queue workers --json`.
type workerJSON struct {
	queue.WorkerInfo
	HeartbeatAge float64 `json:"last_heartbeat_age_seconds"`
	// Leases counts the leases the queue sees the worker hold (expired ones too).
	Leases int64 `json:"leases"`
}

func (c *queueCLI) workers(ctx context.Context) error {
	ws, err := c.q.Workers(ctx)
	if err != nil {
		return c.fail(err)
	}
	st, err := c.reader().Stats(ctx)
	if err != nil {
		return c.fail(err)
	}
	for _, w := range ws {
		age := max(time.Since(w.LastSeen), 0)
		if c.a.jsonOut {
			if err := c.json(workerJSON{WorkerInfo: w, HeartbeatAge: age.Seconds(), Leases: st.RunningBy[w.Name]}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(c.stdout, "%s\tversion=%s\tconcurrency=%d\trunning=%d\tlast_heartbeat=%s ago\tup=%s\n",
			w.Name, w.Version, w.Concurrency, w.Running, age.Round(time.Millisecond), time.Since(w.Started).Round(time.Second))
	}
	if len(ws) == 0 && !c.a.jsonOut {
		fmt.Fprintln(c.stderr, "no live workers")
	}
	return nil
}

func (c *queueCLI) config(ctx context.Context) error {
	rq, ok := c.q.(*queue.Redis)
	if !ok {
		return usageErr("odek queue config applies to Redis only")
	}
	rc := rq.Client()
	sc, ok, err := queue.ReadSharedConfig(ctx, rc, c.prefix)
	if err != nil {
		return c.fail(err)
	}
	if c.a.lease > 0 || c.a.maxAttempts > 0 {
		if !ok {
			sc = queue.SharedConfig{LeaseTTL: 30 * time.Second, MaxAttempts: 3}
		}
		if c.a.lease > 0 {
			sc.LeaseTTL = c.a.lease
		}
		if c.a.maxAttempts > 0 {
			sc.MaxAttempts = c.a.maxAttempts
		}
		if sc, err = queue.WriteSharedConfig(ctx, rc, c.prefix, sc, false); err != nil {
			return c.fail(err)
		}
		ok = true
		fmt.Fprintln(c.stderr, "odek: stored; workers started from now on use it, running workers keep theirs until restarted")
	}
	if c.a.jsonOut {
		if !ok {
			return c.json(map[string]any{"stored": false})
		}
		return c.json(map[string]any{"stored": true, "lease_seconds": sc.LeaseTTL.Seconds(), "max_attempts": sc.MaxAttempts})
	}
	if !ok {
		fmt.Fprintln(c.stdout, "no shared config stored yet (the first odek worker stores its --lease and --max-attempts)")
		return nil
	}
	fmt.Fprintf(c.stdout, "lease\t%s\nmax attempts\t%d\n", sc.LeaseTTL, sc.MaxAttempts)
	return nil
}

func clipGoal(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// redisErr turns an error from Redis into one an operator can act on: it
// names the command, the address and the cause, with exit code 69 when
// Redis could not be reached and 3 when it refused the credentials.
func redisErr(what, addr string, err error) error {
	switch {
	case queue.Unreachable(err):
		return withCode(exitUnavailable, fmt.Errorf("%s: Redis at %s is unreachable: %v (is it running, and is --redis / REDIS_URL right?)", what, addr, rootCause(err)))
	case queue.AuthError(err):
		return withCode(exitSetup, fmt.Errorf("%s: Redis at %s refused the credentials of --redis / REDIS_URL: %v", what, addr, rootCause(err)))
	}
	return withCode(exitError, fmt.Errorf("%s: Redis at %s: %w", what, addr, err))
}

// rootCause is the text of the network error at the bottom of err ("dial
// tcp 127.0.0.1:1: connect: connection refused"), or of its innermost error.
func rootCause(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Error()
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.Error()
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
		err = u
	}
	return err.Error()
}

// parseBudget decodes --budget strictly: an unknown key (a misspelt
// limit) or a negative value is an error naming it.
func parseBudget(s string) (*queue.Budget, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var b queue.Budget
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("--budget: %v (keys: max_runtime_seconds, max_tool_calls, max_input_tokens, max_output_tokens, max_cost_usd)", err)
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("--budget: %w", err)
	}
	return &b, nil
}

// migrateQueue runs queue.Migrate: the one subcommand that must not open
// the queue first (NewRedis refuses the old layout).
func migrateQueue(ctx context.Context, qf *queueFlags, jsonOut bool, stdout io.Writer) error {
	const what = "odek queue migrate"
	rc, addr, err := qf.client()
	if err != nil {
		return err
	}
	defer rc.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = rc.Ping(cctx).Err()
	cancel()
	if err != nil {
		return redisErr(what, addr, err)
	}
	rep, err := queue.Migrate(ctx, rc, qf.prefix)
	if err != nil {
		return redisErr(what, addr, err)
	}
	if jsonOut {
		if err := json.NewEncoder(stdout).Encode(map[string]any{"moved": rep.Moved, "skipped": rep.Skipped, "prefix": queue.KeyPrefix(qf.prefix)}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "moved %d keys to %s*\n", rep.Moved, queue.KeyPrefix(qf.prefix))
		for _, k := range rep.Skipped {
			fmt.Fprintf(stdout, "skipped %s: its new name already holds data; compare and delete one by hand\n", k)
		}
	}
	if len(rep.Skipped) > 0 {
		return withCode(exitError, fmt.Errorf("%s: %d keys could not be moved", what, len(rep.Skipped)))
	}
	return nil
}

// scheduleCounts counts the schedules beside the queue: in Redis under
// the queue's prefix, or in the embedded store's database. nil when they
// cannot be counted (the stats still print).
func (c *queueCLI) scheduleCounts(ctx context.Context) *schedule.Counts {
	if c.admin != nil { // a running bot's store: asked through its socket
		var n schedule.Counts
		if err := c.admin.ScheduleCounts(ctx, &n); err != nil {
			return nil
		}
		return &n
	}
	var st schedule.Counter
	switch q := c.q.(type) {
	case *queue.Redis:
		st = schedule.NewRedis(q.Client(), c.prefix)
	case *estore.Store:
		st = schedule.NewKV(q)
	default:
		return nil
	}
	n, err := st.Counts(ctx)
	if err != nil {
		return nil
	}
	return &n
}
