package ext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/artifacts"
	"github.com/odekrun/odek/internal/toolschema"
	"github.com/odekrun/odek/mcpclient"
	"github.com/sirupsen/logrus"
)

// The checker of `odek ext check` (cmd/odek parses the flags and resolves
// the server's configuration; the rules are here, where they are tested
// without the binary).

// CheckCall is one tool call of a check: a tool and its JSON object
// arguments.
type CheckCall struct {
	Tool string
	Args json.RawMessage
}

// ParseCheckCall parses a --call value, NAME or NAME=JSON-OBJECT; the
// error names the flag. Pure.
func ParseCheckCall(v string) (CheckCall, error) {
	name, raw, hasArgs := strings.Cut(v, "=")
	if err := mcpclient.ValidateToolName(name); err != nil {
		return CheckCall{}, fmt.Errorf("--call %q: tool name: %v", v, err)
	}
	if !hasArgs || strings.TrimSpace(raw) == "" {
		return CheckCall{Tool: name, Args: json.RawMessage(`{}`)}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		return CheckCall{}, fmt.Errorf("--call %s: the arguments must be a JSON object, e.g. --call %s='{\"text\":\"hi\"}'", name, name)
	}
	return CheckCall{Tool: name, Args: json.RawMessage(raw)}, nil
}

// ServerNameFor derives a valid server name from a command path: its file
// name with every other character replaced by '-'. Pure.
func ServerNameFor(command string) string {
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

// CheckReport prints one line per rule of a check (PASS, FAIL, WARN or
// INFO, the rule, the detail) to W and counts the outcomes.
type CheckReport struct {
	W                io.Writer
	Pass, Fail, Warn int
}

// Line prints one rule's outcome.
func (r *CheckReport) Line(status, rule, format string, a ...any) {
	switch status {
	case "PASS":
		r.Pass++
	case "FAIL":
		r.Fail++
	case "WARN":
		r.Warn++
	}
	fmt.Fprintf(r.W, "%-5s %-22s %s\n", status, rule, fmt.Sprintf(format, a...))
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

// CheckOptions are what a check does beyond the handshake.
type CheckOptions struct {
	// Calls are called in order, each Repeat times (at least once).
	Calls  []CheckCall
	Repeat int
	// Verbose, when set, receives the server's stderr and the client's
	// log; nil discards them.
	Verbose io.Writer
}

// Check runs the rules of odek-extension/v1 (docs/EXTENSIONS.md) against
// the server cfg describes, as `odek ext check` does: its limits, the
// handshake, the tool names and schemas, ping, the calls of o (results,
// envelopes, artifact refs, latency), an unknown argument, what it writes
// on stdout, and its shutdown. Each rule is a line of rep; cfg.Logger is
// replaced.
func Check(ctx context.Context, cfg mcpclient.ServerConfig, o CheckOptions, rep *CheckReport) {
	o.Repeat = max(o.Repeat, 1)
	hook := &protocolHook{}
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(io.Discard)
	if o.Verbose != nil {
		log.SetOutput(o.Verbose)
	}
	log.AddHook(hook)
	cfg.Logger = log
	lim, err := cfg.Limits()
	if err != nil {
		rep.Line("FAIL", "config", "%v", err)
		return
	}
	for _, w := range lim.Warnings {
		rep.Line("WARN", "config", "%s", w)
	}
	roots := "no artifact roots (every artifact ref will be rejected; add --root DIR)"
	if len(cfg.ArtifactRoots) > 0 {
		roots = "artifact roots " + strings.Join(cfg.ArtifactRoots, ", ")
	}
	rep.Line("PASS", "config", "timeout %s, startup %s, max_response_bytes %d, max_result_chars %d; %s",
		lim.Timeout, lim.StartupTimeout, lim.MaxResponseBytes, lim.MaxResultChars, roots)

	// Handshake: spawn, initialize, initialized, tools/list.
	t0 := time.Now()
	client, err := mcpclient.Start(ctx, cfg)
	startDur := time.Since(t0)
	if err != nil {
		reportStartError(rep, err, hook)
		return
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
	rep.Line("PASS", "handshake", "negotiated protocolVersion %s%s over %s, serverInfo %s %s, %s for start + initialize + tools/list",
		info.ProtocolVersion, compat, transport, artifacts.DisplayValue(info.Name, 64), artifacts.DisplayValue(info.Version, 32), roundDur(startDur))

	listed := client.Tools()
	checkToolNames(rep, cfg.Name, listed)

	t0 = time.Now()
	// ping is base MCP, but odek-extension/v1's minimal server needs only
	// initialize, tools/list and tools/call: a missing answer is a warning.
	if err := client.Ping(ctx); errors.Is(err, mcpclient.ErrServerDown) || errors.Is(err, mcpclient.ErrClosed) {
		rep.Line("FAIL", "ping", "%v", err)
	} else if err != nil {
		rep.Line("WARN", "ping", "no answer to ping (%v); base MCP expects servers to answer it, odek-extension/v1 does not require it and odek works without it", err)
	} else {
		rep.Line("PASS", "ping", "answered in %s", roundDur(time.Since(t0)))
	}

	firstOK := -1
	for i, c := range o.Calls {
		if checkCall(ctx, rep, client, listed, c, o.Repeat) && firstOK < 0 {
			firstOK = i
		}
	}
	switch {
	case len(o.Calls) == 0:
		rep.Line("INFO", "calls", "no --call given: no tool was called (add --call NAME='{...}' to check results, envelopes and artifacts)")
	case firstOK < 0:
		rep.Line("INFO", "unknown-arguments", "not checked: no --call passed")
	default:
		checkUnknownArgs(ctx, rep, client, o.Calls[firstOK])
	}

	junk, badIDs, _, _ := hook.counts()
	switch {
	case junk > 0:
		rep.Line("FAIL", "stdout", "%d line(s) on stdout were not JSON-RPC messages (stdout is reserved for the protocol; log to stderr)", junk)
	case badIDs > 0:
		rep.Line("FAIL", "stdout", "%d response(s) had an id odek never sent or did not carry a usable id", badIDs)
	default:
		rep.Line("PASS", "stdout", "only JSON-RPC messages on stdout")
	}

	t0 = time.Now()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*lim.CloseGrace+5*time.Second)
	err = client.Close(cctx)
	cancel()
	closeDur := time.Since(t0)
	switch {
	case err != nil:
		rep.Line("FAIL", "shutdown", "%v", err)
	case cfg.URL != "":
		rep.Line("PASS", "shutdown", "session ended (DELETE) in %s", roundDur(closeDur))
	case closeDur >= lim.CloseGrace:
		rep.Line("WARN", "shutdown", "the server did not exit within %s of its stdin closing; odek had to signal it (%s)", lim.CloseGrace, roundDur(closeDur))
	default:
		rep.Line("PASS", "shutdown", "exited %s after its stdin closed", roundDur(closeDur))
	}
}

// reportStartError turns a failed Start into the rule it broke.
func reportStartError(rep *CheckReport, err error, hook *protocolHook) {
	var se *mcpclient.StartError
	phase := ""
	if errors.As(err, &se) {
		phase = se.Phase
	}
	switch {
	case phase == "config":
		rep.Line("FAIL", "config", "%v", err)
	case errors.Is(err, mcpclient.ErrInvalidName):
		rep.Line("PASS", "handshake", "initialize answered")
		rep.Line("FAIL", "tool-names", "%v (names must be 1–128 characters of [A-Za-z0-9_.-] without \"__\")", err)
	case phase == "tools/list":
		rep.Line("PASS", "handshake", "initialize answered")
		rep.Line("FAIL", "tools/list", "%v", err)
	default:
		rep.Line("FAIL", "handshake", "%v", err)
	}
	if _, _, n, last := hook.counts(); n > 0 {
		rep.Line("INFO", "stderr", "the server wrote %d line(s) to stderr; the last: %s", n, artifacts.DisplayValue(last, 200))
	}
}

// checkToolNames reports the listed tools and how odek names them.
func checkToolNames(rep *CheckReport, server string, listed []mcpclient.Tool) {
	rep.Line("PASS", "tool-names", "%d tool(s), every name valid (1–128 characters of [A-Za-z0-9_.-], no \"__\"; the model sees <server>__<tool> in [A-Za-z0-9_-], at most 64)", len(listed))
	var names mcpclient.NameMap
	var shortened []string
	for _, t := range listed {
		q, err := names.Add(server, t.Name)
		if err != nil {
			rep.Line("FAIL", "qualified-names", "%v", err)
			continue
		}
		if q != server+mcpclient.Separator+t.Name {
			shortened = append(shortened, t.Name+" → "+q)
		}
		if strings.TrimSpace(t.Description) == "" {
			rep.Line("WARN", "description", "tool %s has no description (the model sees only its name)", t.Name)
		}
		// What odek will repair before any provider sees the schema (the
		// llm client sends the normalized one): worth fixing in the server.
		if _, repairs, err := toolschema.Normalize(t.InputSchema); err != nil {
			rep.Line("WARN", "schema", "tool %s: inputSchema is not a JSON object odek can send: %v", t.Name, err)
		} else {
			for _, r := range repairs {
				at := r.Path
				if at == "" {
					at = "top level"
				}
				rep.Line("WARN", "schema", "tool %s: inputSchema repaired at %s: %s", t.Name, at, r.Detail)
			}
		}
	}
	if len(shortened) > 0 {
		rep.Line("INFO", "qualified-names", "longer than 64 characters, shortened: %s", strings.Join(shortened, ", "))
	} else if len(listed) > 0 {
		rep.Line("INFO", "qualified-names", "the model sees them as %s", mcpclient.QualifiedName(server, listed[0].Name)+ifMore(len(listed)))
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
func checkCall(ctx context.Context, rep *CheckReport, client *mcpclient.Client, listed []mcpclient.Tool, c CheckCall, repeat int) bool {
	rule := "call " + c.Tool
	found := false
	for _, t := range listed {
		found = found || t.Name == c.Tool
	}
	if !found {
		rep.Line("FAIL", rule, "the server does not list a tool %q", c.Tool)
		return false
	}
	lat := make([]time.Duration, 0, repeat)
	var last *mcpclient.ToolResult
	for range repeat {
		t0 := time.Now()
		res, err := client.Call(ctx, c.Tool, c.Args)
		lat = append(lat, time.Since(t0))
		if err != nil {
			rep.Line("FAIL", rule, "%v", err)
			return false
		}
		if res.IsError {
			rep.Line("FAIL", rule, "the tool answered with an error result: %s", artifacts.DisplayValue(res.Text, 300))
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
	rep.Line("PASS", rule, "%s; latency %s", detail, latencySummary(lat))
	return true
}

// checkUnknownArgs calls a tool that passed once more with an extra,
// unknown argument: the contract says servers must tolerate it.
func checkUnknownArgs(ctx context.Context, rep *CheckReport, client *mcpclient.Client, c CheckCall) {
	var obj map[string]json.RawMessage
	json.Unmarshal(c.Args, &obj)
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	obj["odek_check_unknown_argument"] = json.RawMessage(`true`)
	args, _ := json.Marshal(obj)
	res, err := client.Call(ctx, c.Tool, args)
	switch {
	case err != nil:
		rep.Line("FAIL", "unknown-arguments", "%s with an extra unknown argument: %v", c.Tool, err)
	case res.IsError:
		rep.Line("FAIL", "unknown-arguments", "%s rejected an extra unknown argument (servers must ignore unknown arguments): %s", c.Tool, artifacts.DisplayValue(res.Text, 200))
	default:
		rep.Line("PASS", "unknown-arguments", "%s ignored an extra unknown argument", c.Tool)
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
