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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/internal/toolschema"
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

// extCall is one --call: a tool and its JSON object arguments.
type extCall struct {
	tool string
	args json.RawMessage
}

// parseCall parses NAME or NAME=JSON-OBJECT. Pure.
func parseCall(v string) (extCall, error) {
	name, raw, hasArgs := strings.Cut(v, "=")
	if err := mcpclient.ValidateToolName(name); err != nil {
		return extCall{}, fmt.Errorf("--call %q: tool name: %v", v, err)
	}
	if !hasArgs || strings.TrimSpace(raw) == "" {
		return extCall{tool: name, args: json.RawMessage(`{}`)}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		return extCall{}, fmt.Errorf("--call %s: the arguments must be a JSON object, e.g. --call %s='{\"text\":\"hi\"}'", name, name)
	}
	return extCall{tool: name, args: json.RawMessage(raw)}, nil
}

// checkOpts are the parsed `odek ext check` arguments.
type checkOpts struct {
	calls          []extCall
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
		call, err := parseCall(c)
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

// serverNameFor derives a valid server name from a command path: its file
// name with every other character replaced by '-'. Pure.
func serverNameFor(command string) string {
	base := filepath.Base(command)
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	name := strings.ReplaceAll(string(b), "__", "_-")
	if len(name) > 32 {
		name = name[:32]
	}
	if mcpclient.ValidateName(name) != nil {
		return "server"
	}
	return name
}

// checkReport prints one line per rule and counts outcomes.
type checkReport struct {
	w                     io.Writer
	pass, fail, warnCount int
}

func (r *checkReport) line(status, rule, format string, a ...any) {
	switch status {
	case "PASS":
		r.pass++
	case "FAIL":
		r.fail++
	case "WARN":
		r.warnCount++
	}
	fmt.Fprintf(r.w, "%-5s %-22s %s\n", status, rule, fmt.Sprintf(format, a...))
}

// protocolHook counts what the client's log says about the server
// breaking stdout's protocol (lines that are not JSON-RPC, responses
// without a usable id).
type protocolHook struct {
	mu                sync.Mutex
	junkLines, badIDs int
	stderrLines       int
	lastStderr        string
}

func (h *protocolHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *protocolHook) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case strings.Contains(e.Message, "not JSON-RPC"):
		h.junkLines++
	case strings.Contains(e.Message, "unknown id"), strings.Contains(e.Message, "without a usable id"):
		h.badIDs++
	case e.Data["stream"] == "stderr":
		h.stderrLines++
		h.lastStderr = e.Message
	}
	return nil
}

func (h *protocolHook) counts() (junk, bad, stderrLines int, last string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.junkLines, h.badIDs, h.stderrLines, h.lastStderr
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
	rep := &checkReport{w: stdout}

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
			rep.line("WARN", "config", "%s", w)
		}
		if spec.Err != nil {
			rep.line("FAIL", "config", "%v", spec.Err)
			return rep.finish(stdout)
		}
		if err := checkSpawnApproval(ctx, c.Home, spec); err != nil {
			rep.line("FAIL", "approval", "%v", err)
			return rep.finish(stdout)
		}
		var envWarns []string
		var cerr error
		cfg, envWarns, cerr = spec.ClientConfig(os.Environ(), wd)
		for _, w := range envWarns {
			rep.line("WARN", "config", "%s", w)
		}
		if cerr != nil {
			rep.line("FAIL", "config", "%v", cerr)
			return rep.finish(stdout)
		}
		cfg.ArtifactRoots = append(cfg.ArtifactRoots, o.roots...)
	} else {
		name := o.name
		if name == "" {
			name = serverNameFor(o.command[0])
		}
		env, stripped := mcpclient.FilterEnv(os.Environ(), o.env, ext.IsSecretEnvName)
		fmt.Fprintf(stdout, "odek ext check: server %q: %s\n", name, strings.Join(quoteAll(o.command), " "))
		for _, k := range stripped {
			if _, ok := o.env[k]; ok {
				rep.line("WARN", "config", "--env %s looks like a secret; odek never passes such names to extension servers, so it is not passed here either", k)
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
	hook := &protocolHook{}
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(io.Discard)
	if o.verbose {
		log.SetOutput(stderr)
	}
	log.AddHook(hook)
	cfg.Logger = log
	lim, err := cfg.Limits()
	if err != nil {
		rep.line("FAIL", "config", "%v", err)
		return rep.finish(stdout)
	}
	for _, w := range lim.Warnings {
		rep.line("WARN", "config", "%s", w)
	}
	roots := "no artifact roots (every artifact ref will be rejected; add --root DIR)"
	if len(cfg.ArtifactRoots) > 0 {
		roots = "artifact roots " + strings.Join(cfg.ArtifactRoots, ", ")
	}
	rep.line("PASS", "config", "timeout %s, startup %s, max_response_bytes %d, max_result_chars %d; %s",
		lim.Timeout, lim.StartupTimeout, lim.MaxResponseBytes, lim.MaxResultChars, roots)

	// Handshake: spawn, initialize, initialized, tools/list.
	t0 := time.Now()
	client, err := mcpclient.Start(ctx, cfg)
	startDur := time.Since(t0)
	if err != nil {
		reportStartError(rep, err, hook)
		return rep.finish(stdout)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		client.Close(cctx)
	}()
	info := client.Info()
	compat := ""
	if info.ProtocolVersion != lim.ProtocolVersion {
		compat = fmt.Sprintf(" (odek sent %s; accepted as compatible)", lim.ProtocolVersion)
	}
	transport := "stdio"
	if cfg.URL != "" {
		transport = "Streamable HTTP " + mcpclient.RedactURL(cfg.URL)
	}
	rep.line("PASS", "handshake", "negotiated protocolVersion %s%s over %s, serverInfo %s %s, %s for start + initialize + tools/list",
		info.ProtocolVersion, compat, transport, artifacts.DisplayValue(info.Name, 64), artifacts.DisplayValue(info.Version, 32), roundDur(startDur))

	listed := client.Tools()
	checkToolNames(rep, cfg.Name, listed)

	t0 = time.Now()
	// ping is base MCP, but odek-extension/v1's minimal server needs only
	// initialize, tools/list and tools/call: a missing answer is a warning.
	if err := client.Ping(ctx); errors.Is(err, mcpclient.ErrServerDown) || errors.Is(err, mcpclient.ErrClosed) {
		rep.line("FAIL", "ping", "%v", err)
	} else if err != nil {
		rep.line("WARN", "ping", "no answer to ping (%v); base MCP expects servers to answer it, odek-extension/v1 does not require it and odek works without it", err)
	} else {
		rep.line("PASS", "ping", "answered in %s", roundDur(time.Since(t0)))
	}

	firstOK := -1
	for i, c := range o.calls {
		if checkCall(ctx, rep, client, listed, c, o.repeat) && firstOK < 0 {
			firstOK = i
		}
	}
	switch {
	case len(o.calls) == 0:
		rep.line("INFO", "calls", "no --call given: no tool was called (add --call NAME='{...}' to check results, envelopes and artifacts)")
	case firstOK < 0:
		rep.line("INFO", "unknown-arguments", "not checked: no --call passed")
	default:
		checkUnknownArgs(ctx, rep, client, o.calls[firstOK])
	}

	junk, badIDs, _, _ := hook.counts()
	switch {
	case junk > 0:
		rep.line("FAIL", "stdout", "%d line(s) on stdout were not JSON-RPC messages (stdout is reserved for the protocol; log to stderr)", junk)
	case badIDs > 0:
		rep.line("FAIL", "stdout", "%d response(s) had an id odek never sent or did not carry a usable id", badIDs)
	default:
		rep.line("PASS", "stdout", "only JSON-RPC messages on stdout")
	}

	t0 = time.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*lim.CloseGrace+5*time.Second)
	err = client.Close(cctx)
	cancel()
	closeDur := time.Since(t0)
	switch {
	case err != nil:
		rep.line("FAIL", "shutdown", "%v", err)
	case cfg.URL != "":
		rep.line("PASS", "shutdown", "session ended (DELETE) in %s", roundDur(closeDur))
	case closeDur >= lim.CloseGrace:
		rep.line("WARN", "shutdown", "the server did not exit within %s of its stdin closing; odek had to signal it (%s)", lim.CloseGrace, roundDur(closeDur))
	default:
		rep.line("PASS", "shutdown", "exited %s after its stdin closed", roundDur(closeDur))
	}
	return rep.finish(stdout)
}

func (r *checkReport) finish(stdout io.Writer) error {
	fmt.Fprintf(stdout, "%d passed, %d failed, %d warnings\n", r.pass, r.fail, r.warnCount)
	if r.fail > 0 {
		return withCode(exitError, errors.Join(errReported, fmt.Errorf("odek ext check: %d rule(s) failed", r.fail)))
	}
	return nil
}

// reportStartError turns a failed Start into the rule it broke.
func reportStartError(rep *checkReport, err error, hook *protocolHook) {
	var se *mcpclient.StartError
	phase := ""
	if errors.As(err, &se) {
		phase = se.Phase
	}
	switch {
	case phase == "config":
		rep.line("FAIL", "config", "%v", err)
	case errors.Is(err, mcpclient.ErrInvalidName):
		rep.line("PASS", "handshake", "initialize answered")
		rep.line("FAIL", "tool-names", "%v (names must be 1–128 characters of [A-Za-z0-9_.-] without \"__\")", err)
	case phase == "tools/list":
		rep.line("PASS", "handshake", "initialize answered")
		rep.line("FAIL", "tools/list", "%v", err)
	default:
		rep.line("FAIL", "handshake", "%v", err)
	}
	if _, _, n, last := hook.counts(); n > 0 {
		rep.line("INFO", "stderr", "the server wrote %d line(s) to stderr; the last: %s", n, artifacts.DisplayValue(last, 200))
	}
}

// checkToolNames reports the listed tools and how odek names them.
func checkToolNames(rep *checkReport, server string, listed []mcpclient.Tool) {
	rep.line("PASS", "tool-names", "%d tool(s), every name valid (1–128 characters of [A-Za-z0-9_.-], no \"__\"; the model sees <server>__<tool> in [A-Za-z0-9_-], at most 64)", len(listed))
	var names mcpclient.NameMap
	var shortened []string
	for _, t := range listed {
		q, err := names.Add(server, t.Name)
		if err != nil {
			rep.line("FAIL", "qualified-names", "%v", err)
			continue
		}
		if q != server+mcpclient.Separator+t.Name {
			shortened = append(shortened, t.Name+" → "+q)
		}
		if strings.TrimSpace(t.Description) == "" {
			rep.line("WARN", "description", "tool %s has no description (the model sees only its name)", t.Name)
		}
		// What odek will repair before any provider sees the schema (the
		// llm client sends the normalized one): worth fixing in the server.
		if _, repairs, err := toolschema.Normalize(t.InputSchema); err != nil {
			rep.line("WARN", "schema", "tool %s: inputSchema is not a JSON object odek can send: %v", t.Name, err)
		} else {
			for _, r := range repairs {
				at := r.Path
				if at == "" {
					at = "top level"
				}
				rep.line("WARN", "schema", "tool %s: inputSchema repaired at %s: %s", t.Name, at, r.Detail)
			}
		}
	}
	if len(shortened) > 0 {
		rep.line("INFO", "qualified-names", "longer than 64 characters, shortened: %s", strings.Join(shortened, ", "))
	} else if len(listed) > 0 {
		rep.line("INFO", "qualified-names", "the model sees them as %s", mcpclient.QualifiedName(server, listed[0].Name)+ifMore(len(listed)))
	}
}

func ifMore(n int) string {
	if n > 1 {
		return fmt.Sprintf(" and %d more", n-1)
	}
	return ""
}

// checkCall runs one --call repeat times and reports it. It reports
// whether every attempt passed.
func checkCall(ctx context.Context, rep *checkReport, client *mcpclient.Client, listed []mcpclient.Tool, c extCall, repeat int) bool {
	rule := "call " + c.tool
	found := false
	for _, t := range listed {
		found = found || t.Name == c.tool
	}
	if !found {
		rep.line("FAIL", rule, "the server does not list a tool %q", c.tool)
		return false
	}
	lat := make([]time.Duration, 0, repeat)
	var last *mcpclient.ToolResult
	for range repeat {
		t0 := time.Now()
		res, err := client.Call(ctx, c.tool, c.args)
		lat = append(lat, time.Since(t0))
		if err != nil {
			rep.line("FAIL", rule, "%v", err)
			return false
		}
		if res.IsError {
			rep.line("FAIL", rule, "the tool answered with an error result: %s", artifacts.DisplayValue(res.Text, 300))
			return false
		}
		last = res
	}
	detail := fmt.Sprintf("%d code points", last.ObservedChars)
	if last.ArtifactCount > 0 {
		ids := make([]string, len(last.Artifacts))
		for i, a := range last.Artifacts {
			ids[i] = a.ID
		}
		detail += fmt.Sprintf(", %d artifact ref(s) valid (%s)", last.ArtifactCount, strings.Join(ids, ", "))
	}
	if last.Truncated {
		detail += ", truncated to max_result_chars with the contract's notice"
	}
	rep.line("PASS", rule, "%s; latency %s", detail, latencySummary(lat))
	return true
}

// checkUnknownArgs calls a tool that passed once more with an extra,
// unknown argument: the contract says servers must tolerate it.
func checkUnknownArgs(ctx context.Context, rep *checkReport, client *mcpclient.Client, c extCall) {
	var obj map[string]json.RawMessage
	json.Unmarshal(c.args, &obj)
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	obj["odek_check_unknown_argument"] = json.RawMessage(`true`)
	args, _ := json.Marshal(obj)
	res, err := client.Call(ctx, c.tool, args)
	switch {
	case err != nil:
		rep.line("FAIL", "unknown-arguments", "%s with an extra unknown argument: %v", c.tool, err)
	case res.IsError:
		rep.line("FAIL", "unknown-arguments", "%s rejected an extra unknown argument (servers must ignore unknown arguments): %s", c.tool, artifacts.DisplayValue(res.Text, 200))
	default:
		rep.line("PASS", "unknown-arguments", "%s ignored an extra unknown argument", c.tool)
	}
}

// latencySummary is "1.2ms" for one sample, else p50/p99/max. Pure.
func latencySummary(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	if len(d) == 1 {
		return roundDur(d[0]).String()
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("%d calls, p50 %s, p99 %s, max %s", len(s), roundDur(pct(0.5)), roundDur(pct(0.99)), roundDur(s[len(s)-1]))
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
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
