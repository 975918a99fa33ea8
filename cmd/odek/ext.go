package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient"
	"github.com/sirupsen/logrus"
)

const extUsage = `Usage:
  odek ext check [flags] -- <command> [args...]   check an extension server you run yourself
  odek ext check [flags] <server-name>            check a server configured in mcp_servers
  odek ext approve [--yes] [server-name...]       approve configured servers and their tools ahead of a run

The checker spawns the server, runs the MCP handshake, validates its tool
names, pings it, calls the tools given with --call, validates results,
envelopes and artifact refs (against --root directories), measures latency,
and prints one PASS/FAIL line per rule. Exit status: 0 when every rule
passes, 1 when one fails, 3 for bad usage.

Flags:
`

// cmdExt dispatches `odek ext <subcommand>`.
func cmdExt(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, extUsage)
		return usageErr("odek ext needs a subcommand: check or approve")
	}
	switch args[0] {
	case "check":
		return cmdExtCheck(ctx, args[1:], stdout, stderr)
	case "approve":
		return cmdExtApprove(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, extUsage)
		return nil
	}
	return usageErr("unknown subcommand odek ext %q (want check or approve)", args[0])
}

// repeatable is a flag that may be given more than once.
type repeatable []string

func (r *repeatable) String() string     { return strings.Join(*r, ",") }
func (r *repeatable) Set(v string) error { *r = append(*r, v); return nil }

// checkOpts are the parsed `odek ext check` arguments.
type checkOpts struct {
	calls          []ext.CheckCall
	roots          []string
	env            map[string]string
	name           string
	timeout        time.Duration
	startupTimeout time.Duration
	protocol       string
	repeat         int
	verbose        bool
	server         string   // configured server name, or ""
	command        []string // command and args after --, or nil
}

func parseCheckArgs(args []string, stderr io.Writer) (*checkOpts, error) {
	o := &checkOpts{env: map[string]string{}}
	fs := flag.NewFlagSet("odek ext check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var calls, roots, envs repeatable
	var timeout, startup int
	fs.Var(&calls, "call", "call a tool: NAME or NAME='{\"json\":\"object\"}' (repeatable)")
	fs.Var(&roots, "root", "artifact root directory for file:// artifact refs (repeatable; added to a configured server's artifact_roots)")
	fs.Var(&envs, "env", "KEY=VALUE for the server's environment (repeatable; secret-looking names are stripped as in odek run)")
	fs.StringVar(&o.name, "name", "", "server name used for qualified tool names (default: from the command's file name)")
	fs.IntVar(&timeout, "timeout", 0, "per-request timeout in seconds (default: the server's timeout_seconds, else 30)")
	fs.IntVar(&startup, "startup-timeout", 0, "spawn + initialize + tools/list timeout in seconds (default: the server's, else 10)")
	fs.StringVar(&o.protocol, "protocol-version", "", "MCP version to send in initialize (default: the server's protocol_version, else "+mcpclient.ProtocolVersion+")")
	fs.IntVar(&o.repeat, "repeat", 1, "call each --call tool this many times and report latency percentiles")
	fs.BoolVar(&o.verbose, "v", false, "show the server's stderr and the client's log on stderr")
	fs.Usage = func() {
		fmt.Fprint(stderr, extUsage)
		fs.PrintDefaults()
	}
	flagArgs, rest, dashdash := args, []string(nil), false
	for i, a := range args {
		if a == "--" {
			flagArgs, rest, dashdash = args[:i], args[i+1:], true
			break
		}
	}
	if err := fs.Parse(flagArgs); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, withCode(exitOK, errors.Join(errReported, err))
		}
		return nil, withCode(exitSetup, errors.Join(errReported, err))
	}
	switch {
	case dashdash && fs.NArg() > 0:
		return nil, usageErr("odek ext check: give either a server name or -- <command>, not both")
	case dashdash && len(rest) == 0:
		return nil, usageErr("odek ext check: no command after --")
	case dashdash:
		o.command = rest
	case fs.NArg() == 1:
		o.server = fs.Arg(0)
	default:
		fs.Usage()
		return nil, usageErr("odek ext check: want one server name or -- <command> [args...]")
	}
	for _, c := range calls {
		call, err := ext.ParseCheckCall(c)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		o.calls = append(o.calls, call)
	}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, usageErr("--root %q: %v", r, err)
		}
		o.roots = append(o.roots, abs)
	}
	for _, e := range envs {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, usageErr("--env %q: want KEY=VALUE", e)
		}
		o.env[k] = v
	}
	if timeout < 0 || startup < 0 || o.repeat < 1 {
		return nil, usageErr("odek ext check: --timeout and --startup-timeout must be ≥ 0 and --repeat ≥ 1")
	}
	o.timeout = time.Duration(min(timeout, 3600)) * time.Second
	o.startupTimeout = time.Duration(min(startup, 3600)) * time.Second
	if o.name != "" {
		if err := mcpclient.ValidateName(o.name); err != nil {
			return nil, usageErr("--name: %v", err)
		}
	}
	return o, nil
}

func cmdExtCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCheckArgs(args, stderr)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return withCode(exitSetup, err)
	}
	rep := &ext.CheckReport{W: stdout}

	// The server config: a configured entry or the command line.
	var cfg mcpclient.ServerConfig
	if o.server != "" {
		c, warnings, err := config.Load(config.Options{})
		if err != nil {
			return withCode(exitSetup, err)
		}
		for _, w := range warnings {
			fmt.Fprintln(stderr, "odek: warning:", w.String())
		}
		specs, warns, err := ext.ParseConfig(c.MCPServers.Operator, c.MCPServers.Project)
		if err != nil {
			return withCode(exitSetup, err)
		}
		for _, w := range warns {
			fmt.Fprintln(stderr, "odek: warning:", w)
		}
		var spec *ext.ServerSpec
		var names []string
		for i := range specs {
			names = append(names, specs[i].Name)
			if specs[i].Name == o.server {
				spec = &specs[i]
			}
		}
		if spec == nil {
			if len(names) == 0 {
				return usageErr("odek ext check: no server %q: no mcp_servers are configured in %s or %s", o.server, c.Layers.Operator.Path, c.Layers.Project.Path)
			}
			return usageErr("odek ext check: no server %q in mcp_servers (configured: %s)", o.server, strings.Join(names, ", "))
		}
		fmt.Fprintf(stdout, "odek ext check: server %q from %s\n", spec.Name, spec.File)
		for _, w := range spec.Warnings {
			rep.Line("WARN", "config", "%s", w)
		}
		if spec.Err != nil {
			rep.Line("FAIL", "config", "%v", spec.Err)
			return finishCheck(rep, stdout)
		}
		if err := checkSpawnApproval(ctx, c.Home, spec); err != nil {
			rep.Line("FAIL", "approval", "%v", err)
			return finishCheck(rep, stdout)
		}
		var envWarns []string
		var cerr error
		cfg, envWarns, cerr = spec.ClientConfig(os.Environ(), wd)
		for _, w := range envWarns {
			rep.Line("WARN", "config", "%s", w)
		}
		if cerr != nil {
			rep.Line("FAIL", "config", "%v", cerr)
			return finishCheck(rep, stdout)
		}
		cfg.ArtifactRoots = append(cfg.ArtifactRoots, o.roots...)
	} else {
		name := o.name
		if name == "" {
			name = ext.ServerNameFor(o.command[0])
		}
		env, stripped := mcpclient.FilterEnv(os.Environ(), o.env, ext.IsSecretEnvName)
		fmt.Fprintf(stdout, "odek ext check: server %q: %s\n", name, strings.Join(quoteAll(o.command), " "))
		for _, k := range stripped {
			if _, ok := o.env[k]; ok {
				rep.Line("WARN", "config", "--env %s looks like a secret; odek never passes such names to extension servers, so it is not passed here either", k)
			}
		}
		cfg = mcpclient.ServerConfig{Name: name, Command: o.command[0], Args: o.command[1:], Env: env, Dir: wd, ArtifactRoots: o.roots}
	}
	if o.timeout > 0 {
		cfg.Timeout = o.timeout
	}
	if o.protocol != "" {
		cfg.ProtocolVersion = o.protocol
	}
	if o.startupTimeout > 0 {
		cfg.StartupTimeout = o.startupTimeout
	}
	cfg.ClientVersion = version
	cfg.MaxRestarts = -1 // a checker reports a crash; it does not hide it
	ext.Check(ctx, cfg, ext.CheckOptions{Calls: o.calls, Repeat: o.repeat, Verbose: verboseTo(o.verbose, stderr)}, rep)
	return finishCheck(rep, stdout)
}

// finishCheck prints the tally; a failed rule is exit status 1.
func finishCheck(r *ext.CheckReport, stdout io.Writer) error {
	fmt.Fprintf(stdout, "%d passed, %d failed, %d warnings\n", r.Pass, r.Fail, r.Warn)
	if r.Fail > 0 {
		return withCode(exitError, errors.Join(errReported, fmt.Errorf("odek ext check: %d rule(s) failed", r.Fail)))
	}
	return nil
}

// verboseTo is where `odek ext check -v` shows the server's stderr and
// the client's log (nil without -v).
func verboseTo(verbose bool, stderr io.Writer) io.Writer {
	if verbose {
		return stderr
	}
	return nil
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			out[i] = fmt.Sprintf("%q", a)
		} else {
			out[i] = a
		}
	}
	return out
}

// checkSpawnApproval applies a run's spawn approval to a configured server
// the checker is about to start: a project server needs a persisted
// approval, ODEK_APPROVE_MCP=1 or a yes at the terminal (not saved; `odek
// ext approve` saves). Operator servers need none.
func checkSpawnApproval(ctx context.Context, home string, spec *ext.ServerSpec) error {
	persisted := false
	if home != "" {
		if a, err := ext.ReadApprovals(home); err == nil {
			_, persisted = a.Servers[ext.SpawnKey(spec)]
		}
	}
	prompter, canPrompt := tools.NewTTYPrompter()
	d := ext.DecideSpawn(spec.Source, persisted, config.ApproveMCP(), canPrompt)
	if d.Ask {
		ok, err := prompter.Confirm(ctx, ext.SpawnQuestion(spec))
		if err != nil {
			return fmt.Errorf("server %q not started: the approval prompt failed: %v", spec.Name, err)
		}
		if !ok {
			return fmt.Errorf("server %q not started: declined at the prompt", spec.Name)
		}
		return nil
	}
	if !d.Allow {
		return fmt.Errorf("server %q not started: %s declares it and it was never approved; %s", spec.Name, spec.File, ext.ApprovalHint)
	}
	return nil
}

// cmdExtApprove starts the configured servers (all, or the named ones) the
// way a run would, asks for every approval a run would need — on the
// terminal, or answering yes to all with --yes — and saves the answers in
// $ODEK_HOME/approvals.json, so later runs without a terminal load them.
func cmdExtApprove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("odek ext approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	yes := fs.Bool("yes", false, "approve everything the servers need without asking (each question is printed)")
	verbose := fs.Bool("v", false, "show the servers' stderr and the client's log on stderr")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: odek ext approve [--yes] [server-name...]\n\nStarts the configured MCP servers (all, or the named ones), asks for the\napprovals a run would need and remembers them in $ODEK_HOME/approvals.json.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return withCode(exitOK, errors.Join(errReported, err))
		}
		return withCode(exitSetup, errors.Join(errReported, err))
	}
	var prompter tools.Prompter
	if *yes {
		prompter = tools.PrompterFunc(func(_ context.Context, q string) (bool, error) {
			fmt.Fprintf(stdout, "%syes (--yes)\n", q)
			return true, nil
		})
	} else if p, ok := tools.NewTTYPrompter(); ok {
		prompter = p
	} else {
		return usageErr("odek ext approve: no terminal to ask on; run it in a terminal, or pass --yes to approve everything the servers need")
	}
	cfg, warnings, err := config.Load(config.Options{})
	if err != nil {
		return withCode(exitSetup, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "odek: warning:", w.String())
	}
	wd, err := os.Getwd()
	if err != nil {
		return withCode(exitSetup, err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	if *verbose {
		log.SetOutput(stderr)
		log.SetLevel(logrus.DebugLevel)
	}
	set, err := ext.Load(ctx, ext.Options{
		Servers:       cfg.MCPServers,
		Home:          cfg.Home,
		WorkDir:       wd,
		Prompter:      prompter,
		BaseEnv:       os.Environ(),
		Logger:        log,
		Warn:          func(w string) { fmt.Fprintln(stderr, "odek: warning:", w) },
		ClientVersion: version,
		Only:          fs.Args(),
	})
	if errors.Is(err, ext.ErrConfig) && len(fs.Args()) > 0 {
		return usageErr("odek ext approve: %v", err)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	defer set.Close(cctx)
	reports := set.Report()
	if len(reports) == 0 {
		fmt.Fprintf(stdout, "no mcp_servers configured in %s or %s\n", cfg.Layers.Operator.Path, cfg.Layers.Project.Path)
		return nil
	}
	missing := 0
	for _, r := range reports {
		if r.Reason == ext.ReasonNotSelected {
			continue
		}
		fmt.Fprintln(stdout, r.String())
		if r.Status != ext.StatusLoaded && r.Reason != ext.ReasonDisabled || len(r.Unapproved) > 0 {
			missing++
		}
	}
	if missing > 0 {
		return withCode(exitError, errors.Join(errReported, fmt.Errorf("odek ext approve: %d server(s) not approved or not loaded", missing)))
	}
	return nil
}
