package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/schedule/scheduletool"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/schedule"
	"github.com/odekrun/odek/worker"
	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

const scheduleUsage = `Usage:
  odek schedule add --chat ID (--cron EXPR [--tz ZONE] | --every DURATION | --at TIME) ("<goal>" | --message TEXT)
                    [--user ID] [--session isolated|chat --session-id S] [--model M] [--budget JSON]
                    [--missed skip|run_once] [--quiet] [--active-hours HH:MM-HH:MM] [--min-interval D]
                    [--approve TOOL,...] [--retry-max N]
                                      create a schedule; prints its id
  odek schedule list [--chat ID]      schedules: id, chat, kind, spec, next fire (in the schedule's zone), last status
  odek schedule show ID               one schedule, all fields
  odek schedule pause ID              stop its fires
  odek schedule resume ID             fire again from its next time after now (missed fires are not made up)
  odek schedule rm ID                 delete it (a fire already claimed still runs)
  odek schedule run ID                fire it now; its next fire stays
  odek schedule next ID [--count N]   its next N fire times (default 5)
Every subcommand takes --redis URL (env REDIS_URL), --prefix and --json (one JSON value per line).
Without Redis they use the embedded store file that odek-bot's embedded mode imports and fires
from (--file, env ODEK_SCHEDULE_FILE, default $ODEK_HOME/schedules.json); --store PATH works on the
embedded bot's own database ($ODEK_HOME/store.db) while the bot is stopped.
Exit codes: 0 ok, 1 not found or refused, 3 bad flags or arguments, 69 Redis unreachable.
`

type scheduleArgs struct {
	jsonOut                      bool
	file, store                  string
	chat, user                   int64
	cron, tz, every, at, message string
	session, sessionID, model    string
	budgetJSON, missed, active   string
	quiet                        bool
	approve                      string
	retryMax                     int
	minInterval                  time.Duration
	count                        int
}

// cmdSchedule is the operator CLI of schedules (docs/SCHEDULES.md).
func cmdSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, scheduleUsage)
		return withCode(exitSetup, errors.Join(errReported, errors.New("odek schedule needs a subcommand")))
	}
	sub, args := args[0], args[1:]
	env, err := workerEnv()
	if err != nil {
		return err
	}
	var qf queueFlags
	var a scheduleArgs
	fs := flag.NewFlagSet("odek schedule "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	qf.registerConn(fs, env)
	fs.BoolVar(&a.jsonOut, "json", false, "print JSON (one value per line) instead of text")
	fs.StringVar(&a.file, "file", os.Getenv("ODEK_SCHEDULE_FILE"), "embedded store file, used without Redis (env ODEK_SCHEDULE_FILE; default $ODEK_HOME/schedules.json)")
	fs.StringVar(&a.store, "store", "", "work on odek-bot's embedded database at this path ($ODEK_HOME/store.db), where the bot keeps its schedules; the bot must be stopped")
	switch sub {
	case "add":
		fs.Int64Var(&a.chat, "chat", 0, "chat the schedule belongs to and its fires answer in (required)")
		fs.Int64Var(&a.user, "user", 0, "user the schedule belongs to (optional)")
		fs.StringVar(&a.cron, "cron", "", `5-field cron expression, e.g. "0 9 * * 1-5" (or @daily, @hourly, ...)`)
		fs.StringVar(&a.tz, "tz", "", "IANA time zone of --cron and of a local --at time, e.g. Europe/Berlin (default UTC)")
		fs.StringVar(&a.every, "every", "", "fixed interval from now, e.g. 15m, 1h30m, 2d")
		fs.StringVar(&a.at, "at", "", "one fire at this time: RFC 3339 (2026-12-03T09:00:00+01:00) or 2026-12-03T09:00 in --tz")
		fs.StringVar(&a.message, "message", "", "send this text as a reminder (no model call) instead of running a goal")
		fs.StringVar(&a.session, "session", "isolated", "isolated (a fresh session per fire) or chat (continue --session-id)")
		fs.StringVar(&a.sessionID, "session-id", "", "with --session chat: the session fires continue (the bot's is telegram:<chat>)")
		fs.StringVar(&a.model, "model", "", "model for the fired jobs (workers honour allowed models only)")
		fs.StringVar(&a.budgetJSON, "budget", "", `job budget as a limits JSON object, e.g. {"max_tool_calls":5}`)
		fs.StringVar(&a.missed, "missed", "skip", "fires missed while nothing ran: skip, or run_once (one fire for all)")
		fs.BoolVar(&a.quiet, "quiet", false, "quiet check-in: deliver the answer only when the model reports something")
		fs.StringVar(&a.active, "active-hours", "", "fire only between these times of day in --tz, e.g. 08:00-20:00")
		fs.DurationVar(&a.minInterval, "min-interval", 0, "shortest interval allowed (default 1m; lower it for tests)")
		fs.StringVar(&a.approve, "approve", "", "tools the fired jobs may run without confirmation, comma-separated (nobody is there to confirm; never schedule)")
		fs.IntVar(&a.retryMax, "retry-max", 0, "a one-shot goal whose job failed fires again up to this many times (0: 3, -1: never)")
	case "list":
		fs.Int64Var(&a.chat, "chat", 0, "only this chat's schedules")
	case "next":
		fs.IntVar(&a.count, "count", 5, "how many fire times")
	case "show", "pause", "resume", "rm", "run":
	case "-h", "--help", "help":
		fmt.Fprint(stdout, scheduleUsage)
		return nil
	default:
		fmt.Fprint(stderr, scheduleUsage)
		return usageErr("unknown schedule subcommand %q", sub)
	}
	// Flags may follow the id (`next ID --count 3`); add's goal words are
	// taken as they are after the first one.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return withCode(exitOK, errors.Join(errReported, err))
			}
			return withCode(exitSetup, errors.Join(errReported, err))
		}
		if sub == "add" || fs.NArg() == 0 {
			pos = append(pos, fs.Args()...)
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	var id string
	var req schedule.Schedule
	switch sub {
	case "add":
		if req, err = a.schedule(pos); err != nil {
			return err
		}
	case "list":
		if len(pos) > 0 {
			return usageErr("odek schedule list takes no arguments, got %q", pos)
		}
	default:
		if len(pos) != 1 {
			return usageErr("odek schedule %s needs exactly one schedule id", sub)
		}
		id = pos[0]
		if sub == "next" && (a.count < 1 || a.count > 1000) {
			return usageErr("--count must be 1..1000")
		}
	}

	sv, closeFn, err := openSchedules(ctx, &qf, a.file, a.store, "odek schedule "+sub, stderr)
	if err != nil {
		return err
	}
	defer closeFn()
	sv.Limits.MinInterval = a.minInterval
	op := schedule.Owner{Operator: true, ChatID: a.chat}
	fail := func(err error) error {
		switch {
		case errors.Is(err, schedule.ErrNotFound), errors.Is(err, schedule.ErrForbidden):
			return withCode(exitError, err)
		case errors.Is(err, schedule.ErrInvalidSpec), errors.Is(err, schedule.ErrInvalid), errors.Is(err, schedule.ErrLimit):
			return withCode(exitSetup, err)
		case queue.Unreachable(err):
			return withCode(exitUnavailable, err)
		}
		return withCode(exitError, err)
	}
	switch sub {
	case "add":
		s, err := sv.Create(ctx, op, req)
		if err != nil {
			return fail(err)
		}
		if a.jsonOut {
			return printJSON(stdout, s)
		}
		fmt.Fprintln(stdout, s.ID)
		return nil
	case "list":
		l, err := sv.List(ctx, op)
		if err != nil {
			return fail(err)
		}
		if a.jsonOut {
			for _, s := range l {
				if err := printJSON(stdout, s); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCHAT\tKIND\tSPEC\tNEXT\tLAST\tFIRES\tTEXT")
		for _, s := range l {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, s.ChatID, s.Kind, specText(s), nextText(s), lastText(s), s.Fires, clipText(s.Text, 40))
		}
		return tw.Flush()
	case "show":
		s, err := sv.Get(ctx, op, id)
		if err != nil {
			return fail(err)
		}
		if a.jsonOut {
			return printJSON(stdout, s)
		}
		tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
		for _, kv := range [][2]string{
			{"id", s.ID}, {"chat", fmt.Sprint(s.ChatID)}, {"user", fmt.Sprint(s.UserID)}, {"kind", string(s.Kind)},
			{"spec", specText(s)}, {"text", s.Text}, {"session", string(s.Session) + " " + s.SessionID}, {"model", s.Model},
			{"missed", string(s.Missed)}, {"quiet", fmt.Sprint(s.Quiet)}, {"active hours", s.ActiveHours},
			{"enabled", fmt.Sprint(s.Enabled)}, {"next", nextText(s)}, {"last", lastText(s)}, {"last job", s.LastJobID},
			{"last error", s.LastError}, {"fires", fmt.Sprint(s.Fires)}, {"misses", fmt.Sprint(s.Misses)},
			{"created", s.CreatedAt.Format(time.RFC3339)},
		} {
			fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
		}
		return tw.Flush()
	case "pause", "resume":
		f := sv.Pause
		if sub == "resume" {
			f = sv.Resume
		}
		s, err := f(ctx, op, id)
		if err != nil {
			return fail(err)
		}
		if a.jsonOut {
			return printJSON(stdout, s)
		}
		fmt.Fprintf(stdout, "%s: enabled %v, next %s\n", s.ID, s.Enabled, nextText(s))
		return nil
	case "rm":
		if err := sv.Delete(ctx, op, id); err != nil {
			return fail(err)
		}
		if a.jsonOut {
			return printJSON(stdout, map[string]string{"deleted": id})
		}
		fmt.Fprintf(stdout, "%s deleted\n", id)
		return nil
	case "run":
		if sv.Queue == nil {
			// Embedded mode: the queue lives inside odek-bot. Make the
			// schedule due now; the bot's runner fires it within a second.
			if _, err := sv.Get(ctx, op, id); err != nil {
				return fail(err)
			}
			s, err := sv.Store.SetEnabled(ctx, id, true, time.Now())
			if err != nil {
				return fail(err)
			}
			if a.jsonOut {
				return printJSON(stdout, s)
			}
			fmt.Fprintf(stdout, "%s is due now; odek-bot fires it within a second\n", id)
			return nil
		}
		jobID, err := sv.RunNow(ctx, op, id)
		if err != nil {
			return fail(err)
		}
		if a.jsonOut {
			return printJSON(stdout, map[string]string{"job_id": jobID})
		}
		fmt.Fprintln(stdout, jobID)
		return nil
	case "next":
		s, err := sv.Get(ctx, op, id)
		if err != nil {
			return fail(err)
		}
		sp, err := s.ParsedSpec()
		if err != nil {
			return fail(err)
		}
		t := time.Now()
		if !s.Next.IsZero() {
			t = s.Next.Add(-time.Millisecond)
		}
		for i := 0; i < a.count; i++ {
			t = sp.Next(t, s.Anchor)
			if t.IsZero() {
				break
			}
			if a.jsonOut {
				if err := printJSON(stdout, t); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintln(stdout, t.In(sp.Location()).Format("2006-01-02 15:04:05 MST (Mon)"))
		}
		return nil
	}
	return nil
}

// schedule builds the add request from the flags and the goal words.
func (a *scheduleArgs) schedule(words []string) (schedule.Schedule, error) {
	var s schedule.Schedule
	if a.chat == 0 {
		return s, usageErr("odek schedule add needs --chat ID (a non-zero chat id)")
	}
	n := 0
	for _, v := range []string{a.cron, a.every, a.at} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return s, usageErr("odek schedule add needs exactly one of --cron EXPR, --every DURATION, --at TIME")
	}
	switch {
	case a.cron != "":
		s.Spec = "cron " + a.cron
	case a.every != "":
		s.Spec = "every " + a.every
	default:
		s.Spec = "at " + a.at
	}
	if a.tz != "" && a.every != "" {
		return s, usageErr("--tz goes with --cron or a local --at time, not --every")
	}
	goal := strings.TrimSpace(strings.Join(words, " "))
	switch {
	case a.message != "" && goal != "":
		return s, usageErr("give either a goal or --message TEXT, not both")
	case a.message != "":
		s.Kind, s.Text = schedule.KindMessage, a.message
	case goal != "":
		s.Kind, s.Text = schedule.KindGoal, goal
	default:
		return s, usageErr(`odek schedule add needs a goal ("<goal>") or --message TEXT`)
	}
	if a.budgetJSON != "" {
		b, err := parseBudget(a.budgetJSON)
		if err != nil {
			return s, usageErr("%v", err)
		}
		s.Budget = b
	}
	if a.minInterval < 0 {
		return s, usageErr("--min-interval must be ≥ 0")
	}
	s.ChatID, s.UserID, s.TZ = a.chat, a.user, a.tz
	s.Session, s.SessionID, s.Model = schedule.SessionMode(a.session), a.sessionID, a.model
	s.Missed, s.Quiet, s.ActiveHours = schedule.MissedPolicy(a.missed), a.quiet, a.active
	for _, t := range strings.Split(a.approve, ",") {
		if t = strings.TrimSpace(t); t != "" {
			s.Approve = append(s.Approve, t)
		}
	}
	s.RetryMax = a.retryMax
	return s, nil
}

// scheduleFile is the embedded store's file: ODEK_SCHEDULE_FILE, else
// schedules.json in odek's home.
func scheduleFile(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	home, err := config.HomeDir(nil)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(home, "schedules.json"), nil
}

// openSchedules opens odek-bot's embedded database with --store (its
// schedules and its queue, for run), else the Redis store (and queue)
// when a Redis URL is set, else the embedded file.
func openSchedules(ctx context.Context, qf *queueFlags, file, store, what string, stderr io.Writer) (*schedule.Service, func(), error) {
	if store != "" {
		st, err := estore.Open(store, queue.Options{})
		if err != nil {
			return nil, nil, withCode(exitUnavailable, fmt.Errorf("%s: %w", what, err))
		}
		return &schedule.Service{Store: schedule.NewKV(st), Queue: st}, func() { st.Close() }, nil
	}
	if qf.redisURL == "" {
		p, err := scheduleFile(file)
		if err != nil {
			return nil, nil, withCode(exitSetup, fmt.Errorf("schedule file: %w", err))
		}
		return &schedule.Service{Store: schedule.NewFile(p)}, func() {}, nil
	}
	rlog := logrus.New()
	rlog.SetOutput(stderr)
	rlog.SetLevel(logrus.ErrorLevel)
	redis.SetLogger(worker.RedisLogger{Log: rlog})
	rc, q, err := qf.connect(ctx, what, qf.optionsDefault())
	if err != nil {
		return nil, nil, err
	}
	return &schedule.Service{Store: schedule.NewRedis(rc, qf.prefix), Queue: q}, func() { rc.Close() }, nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func specText(s schedule.Schedule) string {
	if s.TZ != "" {
		return s.Spec + " (" + s.TZ + ")"
	}
	return s.Spec
}

func nextText(s schedule.Schedule) string {
	if !s.Enabled || s.Next.IsZero() {
		return "paused"
	}
	loc, err := schedule.LoadZone(s.TZ)
	if err != nil {
		loc = time.UTC
	}
	return s.Next.In(loc).Format("2006-01-02 15:04:05 MST")
}

func lastText(s schedule.Schedule) string {
	if s.Last.IsZero() {
		return "-"
	}
	return string(s.LastStatus) + " " + s.Last.UTC().Format(time.RFC3339)
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// hostSchedules runs the schedule firing loop beside `odek worker`'s
// claims (every worker does; the store's claim makes each fire happen
// once) and registers its metrics. A fire this worker claimed and did not
// finish is taken over after lease (the queue's job lease).
// ODEK_SCHEDULES=off turns it off. The returned func stops it.
func hostSchedules(ctx context.Context, rc redis.UniversalClient, q queue.Queue, prefix, name string, lease time.Duration, reg schedule.AddCounter, log logrus.FieldLogger) func() {
	if os.Getenv("ODEK_SCHEDULES") == "off" {
		return func() {}
	}
	r := &schedule.Runner{Store: schedule.NewRedis(rc, prefix), Queue: q, Name: name, Lease: lease, Log: log}
	if reg != nil {
		if err := r.Register(reg); err != nil {
			log.WithError(err).Warn("odek worker: schedule metrics not registered")
		}
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	return func() { cancel(); <-done }
}

// retrySchedule arms a failed one-shot schedule's retry after the worker
// acknowledged its job's result (schedule.RetryFailed).
func retrySchedule(rc redis.UniversalClient, prefix string, log logrus.FieldLogger) func(queue.Job, queue.Result) {
	st := schedule.NewRedis(rc, prefix)
	return func(job queue.Job, res queue.Result) {
		if _, ok := schedule.ParseFireKey(job.IdempotencyKey); !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		next, err := schedule.RetryFailed(ctx, st, job, res, time.Now())
		if err != nil {
			log.WithError(err).WithField("job_id", job.ID).Warn("odek worker: arming a schedule's retry failed")
		} else if !next.IsZero() {
			log.WithFields(logrus.Fields{"job_id": job.ID, "next": next}).Info("odek worker: a one-shot schedule's job failed; it fires again")
		}
	}
}

// scheduleTools gives every job the schedule tool of its chat
// (schedule/scheduletool), on st with the chat limits of ODEK_SCHEDULE_*;
// nil (no tool) when ODEK_SCHEDULES=off or the limits do not parse.
func scheduleTools(st schedule.Store, q schedule.Enqueuer, log logrus.FieldLogger) func(queue.Job, tools.Prompter) []agent.Tool {
	if os.Getenv("ODEK_SCHEDULES") == "off" {
		return nil
	}
	lim, err := schedule.LimitsFromEnv(os.Getenv)
	if err != nil {
		log.WithError(err).Error("schedules: the schedule tool is off")
		return nil
	}
	sv := &schedule.Service{Store: st, Queue: q, Limits: lim}
	return func(job queue.Job, ask tools.Prompter) []agent.Tool {
		if job.ChatID == 0 {
			return nil
		}
		return []agent.Tool{scheduletool.New(sv, job, ask)}
	}
}
