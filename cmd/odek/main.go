// Command odek is the command-line surface of the odek agent runtime.
//
// main only wires: it builds a context cancelled by SIGINT/SIGTERM, calls
// run and maps the returned error to an exit code (see exitCode).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/odekrun/odek/agent"
	// Grows the main goroutine's stack before any deep initialiser runs
	// (see the package; round 4 of issue 25 in docs/BENCHMARKS.md).
	"github.com/odekrun/odek/internal/sandbox"
	_ "github.com/odekrun/odek/internal/stackstart"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

// Exit codes of odek: agent's, the one declaration (odek-extension/v1
// plus the shell convention for signals).
const (
	exitOK        = agent.ExitOK
	exitError     = agent.ExitError     // task, model or tool error
	exitTimeout   = agent.ExitTimeout   // overall timeout
	exitSetup     = agent.ExitSetup     // bad flags, bad config, missing credentials
	exitBudget    = agent.ExitBudget    // execution budget exhausted
	exitCancelled = agent.ExitCancelled // SIGINT/SIGTERM
)

func main() {
	sandbox.Main() // `odek __odek-sandbox-exec …`: apply a job's sandbox, exec its command
	tuneScheduler(os.Args[1:], os.Getenv("GOMAXPROCS") != "")
	tuneGC(os.Args[1:], os.Getenv("GOGC") != "")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	code := exitCode(err)
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintln(os.Stderr, "odek:", err)
	}
	os.Exit(code)
}

// tuneScheduler gives the commands that run one agent loop a single P
// (GOMAXPROCS=1) unless the GOMAXPROCS variable is set. Such a process
// waits on the model and on tools nearly all the time; with more Ps every
// goroutine hand-off (HTTP read and write loops, tool goroutines, the event
// drain) wakes an idle P's thread that finds nothing to do, which costs
// context switches. Measured on the 2-core VM (docs/BENCHMARKS.md): 12
// instead of 22 context switches and ~25 % less CPU per model call.
// Workers, which run many jobs at once, keep the default.
func tuneScheduler(args []string, userSet bool) {
	if userSet || len(args) == 0 {
		return
	}
	switch args[0] {
	case "run", "continue", "subagent":
		runtime.GOMAXPROCS(1)
	}
}

// exitError carries an exit code through run's error return.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// errReported marks errors already shown to the user (e.g. in --json
// output), so main only sets the exit code.
var errReported = errors.New("reported")

func withCode(code int, err error) error { return &exitErr{code: code, err: err} }

func usageErr(format string, a ...any) error {
	return withCode(exitSetup, fmt.Errorf(format, a...))
}

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitErr
	if errors.As(err, &e) {
		return e.code
	}
	return exitError
}

const usage = `odek — an autonomous agent runtime

Usage:
  odek run [flags] [--] <goal>   run one goal to an answer (odek run -h for flags)
  odek continue [--id ID] <goal> resume the latest (or named) session
  odek session list|show ID|delete ID|trim [--keep N] ID
  odek subagent --task FILE | --goal TEXT
                                 run one delegated task; one JSON result on stdout
  odek worker [--redis URL] [--concurrency N]
                                 run queued jobs from Redis (env REDIS_URL)
  odek queue stats|submit|cancel|dead|retry
                                 operate the Redis job queue (odek queue help)
  odek schedule add|list|show|pause|resume|rm|run|next   schedules (odek schedule help)
  odek ext check [flags] -- <command> [args...] | <server>
                                 check an MCP extension server against odek-extension/v1
  odek ext approve [--yes] [server...]
                                 answer extension approvals ahead of time
  odek mcp login|logout|status [server]
                                 OAuth login of a remote MCP server (odek mcp help)
  odek skills list [--json] | show <name>
                                 the Agent Skills the model is offered (docs/SKILLS.md)
  odek init [--force]            write a starter config to $ODEK_HOME/config.json
  odek doctor [--json] [--redis URL] [--no-model]
                                 check Landlock and the sandbox, Redis, the model
                                 endpoint and the MCP servers; exit 0 when all work
  odek config show [--json]      print the effective configuration, each value
                                 with the layer it came from (secrets masked)
  odek config env                list every environment variable odek reads
  odek version                   print the version

Exit codes: 0 success, 1 task/model/tool error, 3 setup error (flags, config,
credentials), 2 overall timeout (subagent), 4 budget exhausted, 5 answer invalid
against --output-schema, 69 Redis unreachable (odek queue),
130 cancelled by SIGINT/SIGTERM.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return withCode(exitSetup, errors.Join(errReported, errors.New("no command")))
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr, false)
	case "continue":
		return cmdRun(ctx, args[1:], stdout, stderr, true)
	case "subagent":
		return cmdSubagent(ctx, args[1:], stdout, stderr)
	case "session":
		return cmdSession(ctx, args[1:], stdout)
	case "worker":
		return cmdWorker(ctx, args[1:], stdout, stderr)
	case "queue":
		return cmdQueue(ctx, args[1:], stdin, stdout, stderr)
	case "schedule":
		return cmdSchedule(ctx, args[1:], stdout, stderr)
	case "ext":
		return cmdExt(ctx, args[1:], stdout, stderr)
	case "mcp": // OAuth logins of remote MCP servers (mcpcmd.go)
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr)
	case "skills": // Agent Skills (skillscmd.go)
		return cmdSkills(ctx, args[1:], stdout, stderr)
	case "init":
		return cmdInit(args[1:], stdout, stderr)
	case "doctor":
		return cmdDoctor(ctx, args[1:], stdout, stderr)
	case "config":
		return cmdConfig(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "odek", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return usageErr("unknown command %q (try `odek help`)", args[0])
	}
}
