package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/queue"
)

const queueUsage = `Usage:
  odek queue stats [--json]                        depth, running per worker, dead letters, unread results
  odek queue submit --chat ID [--wait] "<goal>"    enqueue a goal; with --wait print the answer and exit as odek run would
  odek queue cancel ID                             cancel a queued or running job
  odek queue dead [--max N]                        list dead-lettered jobs
  odek queue retry ID                              requeue a dead job as a new job
Every subcommand takes --redis URL (env REDIS_URL), --prefix, --lease and --max-attempts.
`

// cmdQueue is the operator CLI of the Redis queue.
func cmdQueue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, queueUsage)
		return withCode(exitSetup, errors.Join(errReported, errors.New("odek queue needs a subcommand")))
	}
	sub, args := args[0], args[1:]
	var qf queueFlags
	fs := flag.NewFlagSet("odek queue "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	qf.register(fs)
	var (
		jsonOut, wait bool
		chat, user    int64
		sessionID     string
		idemKey       string
		maxDead       int64
		timeout       time.Duration
		budgetJSON    string
	)
	switch sub {
	case "stats":
		fs.BoolVar(&jsonOut, "json", false, "print the stats as one JSON object")
	case "submit":
		fs.Int64Var(&chat, "chat", 0, "chat id the job belongs to (required; jobs of one chat run one at a time, in order)")
		fs.Int64Var(&user, "user", 0, "user id (optional)")
		fs.StringVar(&sessionID, "session", "", "session to continue (default: the chat's)")
		fs.StringVar(&idemKey, "key", "", "idempotency key: a second submit with the same key within the dedupe window is the same job")
		fs.StringVar(&budgetJSON, "budget", "", `job budget as a limits JSON object, e.g. {"max_tool_calls":5} (may only lower the workers' limits)`)
		fs.BoolVar(&wait, "wait", false, "wait for the result, print the answer on stdout and exit with the run's exit code")
		fs.DurationVar(&timeout, "timeout", 0, "with --wait: give up after this long (exit 2; the job goes on); 0 waits forever")
	case "dead":
		fs.Int64Var(&maxDead, "max", 0, "list at most this many (0: all)")
	case "retry", "cancel":
	case "-h", "--help", "help":
		fmt.Fprint(stdout, queueUsage)
		return nil
	default:
		fmt.Fprint(stderr, queueUsage)
		return usageErr("unknown queue subcommand %q", sub)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, err))
		}
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	// Validate the arguments before connecting.
	var goal, id string
	switch sub {
	case "submit":
		goal = strings.TrimSpace(strings.Join(fs.Args(), " "))
		if chat == 0 {
			return usageErr("odek queue submit needs --chat ID (a non-zero chat id)")
		}
		if goal == "" {
			return usageErr(`odek queue submit needs a goal: odek queue submit --chat ID "<goal>"`)
		}
		if budgetJSON != "" && !json.Valid([]byte(budgetJSON)) {
			return usageErr("--budget is not valid JSON")
		}
	case "retry", "cancel":
		if fs.NArg() != 1 {
			return usageErr("odek queue %s needs exactly one job id", sub)
		}
		id = fs.Arg(0)
	default:
		if fs.NArg() > 0 {
			return usageErr("odek queue %s takes no arguments, got %q", sub, fs.Args())
		}
	}
	rc, q, err := qf.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()

	switch sub {
	case "stats":
		st, err := q.Stats(ctx)
		if err != nil {
			return err
		}
		return printStats(stdout, st, jsonOut)
	case "dead":
		jobs, err := q.DeadLetters(ctx, maxDead)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			fmt.Fprintf(stdout, "%s\tchat=%d\tattempts=%d\tcreated=%s\t%s\n", j.ID, j.ChatID, j.Attempt, j.CreatedAt.Format(time.RFC3339), clipGoal(j.Goal, 60))
		}
		if len(jobs) == 0 {
			fmt.Fprintln(stderr, "no dead-lettered jobs")
		}
		return nil
	case "retry":
		j, err := q.Retry(ctx, id)
		if errors.Is(err, queue.ErrNotFound) {
			return withCode(exitError, fmt.Errorf("no dead-lettered job %q (odek queue dead lists them)", id))
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, j.ID)
		return nil
	case "cancel":
		if err := q.Cancel(ctx, id); errors.Is(err, queue.ErrNotFound) {
			return withCode(exitError, fmt.Errorf("job %q is unknown or already finished", id))
		} else if err != nil {
			return err
		}
		return nil
	}

	// submit
	job := queue.Job{ChatID: chat, UserID: user, Goal: goal, SessionID: sessionID, IdempotencyKey: idemKey}
	if budgetJSON != "" {
		job.Budget = json.RawMessage(budgetJSON)
	}
	stored, dup, err := q.Enqueue(ctx, job)
	if err != nil {
		if errors.Is(err, queue.ErrInvalidJob) || errors.Is(err, queue.ErrPayloadTooLarge) {
			return withCode(exitSetup, err)
		}
		return err
	}
	if dup {
		fmt.Fprintf(stderr, "odek: idempotency key %q was already used: job %s\n", idemKey, stored.ID)
	}
	if !wait {
		fmt.Fprintln(stdout, stored.ID)
		return nil
	}
	fmt.Fprintln(stderr, "odek: job", stored.ID)
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res, err := waitJobResult(wctx, q, stored.ID)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return withCode(exitTimeout, fmt.Errorf("no result for job %s within --timeout %v (the job goes on)", stored.ID, timeout))
	case err != nil && ctx.Err() != nil:
		return withCode(exitCancelled, fmt.Errorf("stopped waiting for job %s (the job goes on; odek queue cancel %s stops it)", stored.ID, stored.ID))
	case err != nil:
		return err
	}
	return printResult(stdout, stderr, res)
}

// waitJobResult follows the job's progress stream (which wakes it when the
// run ends) and looks the result up after every wake-up or 500 ms.
func waitJobResult(ctx context.Context, q *queue.Redis, id string) (queue.Result, error) {
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

func printStats(w io.Writer, st queue.Stats, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(map[string]any{"ready": st.Ready, "running": st.Running, "running_by": st.RunningBy, "dead": st.Dead, "results": st.Results})
	}
	fmt.Fprintf(w, "ready\t%d\nrunning\t%d\ndead\t%d\nresults\t%d\n", st.Ready, st.Running, st.Dead, st.Results)
	names := make([]string, 0, len(st.RunningBy))
	for n := range st.RunningBy {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "worker %s\t%d\n", n, st.RunningBy[n])
	}
	return nil
}

func clipGoal(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
