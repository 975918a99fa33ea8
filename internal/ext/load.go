package ext

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient"
	"github.com/sirupsen/logrus"
)

// Options configure Load. Every field works at its zero value: no
// servers, approvals neither read nor saved, nobody to ask.
type Options struct {
	// Servers are both configuration files' mcp_servers sections
	// (config.Config.MCPServers).
	Servers config.MCPServers
	// Home is ODEK_HOME, where approvals.json lives. "" ⇒ approvals are
	// neither read nor saved (only ApproveAll, auto_approve and the
	// prompt grant, for this invocation).
	Home string
	// WorkDir is every server's working directory. "" ⇒ odek's.
	WorkDir string
	// Prompter asks the operator for approvals. nil ⇒ nobody can be
	// asked: what is not granted otherwise is not loaded.
	Prompter tools.Prompter
	// ApproveAll grants every approval for this invocation without asking
	// and without saving (ODEK_APPROVE_MCP=1; the caller reads the
	// environment).
	ApproveAll bool
	// BuiltinNames are the names of the other tools of the run; an MCP
	// tool whose qualified name equals one fails Load.
	BuiltinNames []string
	// BaseEnv is odek's environment ("KEY=value"); servers get only its
	// PATH, HOME, USER, LANG, TZ, TMPDIR, TERM and LC_* entries. nil ⇒
	// none of them.
	BaseEnv []string
	// Logger receives the servers' stderr, restarts and protocol
	// warnings (field server=<name>). nil ⇒ discarded.
	Logger logrus.FieldLogger
	// Warn receives one human-readable line per problem that does not
	// stop the run (clamped values, stripped fields and env keys, an
	// unusable approvals file, restarts). nil ⇒ discarded.
	Warn func(string)
	// ClientVersion is sent to servers as clientInfo.version. "" ⇒ "dev".
	ClientVersion string
	// Artifacts receives every validated artifact ref of a tool result,
	// under the id "<server>/<ref id>", so artifact_read can page through
	// it. nil ⇒ refs are only shown as metadata lines.
	Artifacts Registrar
	// Scope, when set (ScopeShared or ScopeJob), keeps only the servers of
	// that scope: the rest are left out of the Set entirely (a worker
	// loads its shared servers once and each job its own). "" ⇒ all.
	Scope string
	// Jail, when set, starts every server of this Load confined in it
	// (mcpclient.ServerConfig.Start), with HOME and TMPDIR set to the
	// jail's private temp dir. The caller keeps it open while the Set
	// lives.
	Jail *sandbox.Jail
	// Roots, when set, are the directories every server may work in
	// (roots/list; the roots capability is advertised). It is called on
	// each roots/list, so it may follow the current job. nil ⇒ no roots
	// capability.
	Roots func() []string
	// OnProgress, when set, receives the progress signals of running MCP
	// tool calls (at most one per call every ProgressInterval); they are
	// also emitted as tool_call_progress events of the run. It must not
	// block.
	OnProgress func(ToolProgress)
	// Emit, when set, sends an event of the run ctx belongs to
	// (agent.Emit; ext sits below agent and cannot import it): progress
	// signals become events.ToolCallProgress events through it.
	Emit func(ctx context.Context, typ events.Type, data map[string]any)
	// Only, when not empty, names the servers to consider; every other
	// configured server is reported as skipped and never started, and a
	// name that is not configured is an ErrConfig error. For `odek ext
	// approve <server>…`.
	Only []string
}

// Status is the outcome of one server.
type Status string

// Statuses.
const (
	StatusLoaded  Status = "loaded"
	StatusSkipped Status = "skipped" // disabled or not approved
	StatusFailed  Status = "failed"  // config error or failed start
)

// Reasons of skipped servers that are not problems.
const (
	ReasonDisabled    = "disabled (enabled: false)"
	ReasonNotSelected = "not selected"
)

// ServerReport is the outcome of one configured server, for stderr
// (String) and for the run_started event (Set.ReportData).
type ServerReport struct {
	Name     string `json:"name"`
	Source   Source `json:"source"`
	Required bool   `json:"required"`
	Status   Status `json:"status"`
	// Tools is the number of tools offered to the model.
	Tools int `json:"tools"`
	// Renamed maps the server's name of each tool whose qualified name
	// was shortened to that qualified name.
	Renamed map[string]string `json:"renamed,omitempty"`
	// Unapproved lists tools the server offers that were not approved
	// and are not loaded.
	Unapproved []string `json:"unapproved_tools,omitempty"`
	// Grant is what allowed the spawn (loaded servers).
	Grant Grant `json:"grant,omitempty"`
	// Reason says why a server was skipped or failed, or how to approve
	// its unapproved tools.
	Reason string `json:"reason,omitempty"`
	// Restarts counts restart attempts so far.
	Restarts int `json:"restarts"`
	// ProtocolVersion is the server's answer to initialize.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// StartupMS is how long spawn + initialize + tools/list took.
	StartupMS int64 `json:"startup_ms,omitempty"`
}

// String is the report's stderr line.
func (r ServerReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %q (%s", r.Name, r.Source)
	if r.Required {
		b.WriteString(", required")
	}
	b.WriteString("): ")
	switch r.Status {
	case StatusLoaded:
		fmt.Fprintf(&b, "loaded with %d tool", r.Tools)
		if r.Tools != 1 {
			b.WriteString("s")
		}
		if len(r.Renamed) > 0 {
			keys := make([]string, 0, len(r.Renamed))
			for k := range r.Renamed {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteString("; renamed")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, " %s → %s", k, r.Renamed[k])
			}
		}
		if len(r.Unapproved) > 0 {
			fmt.Fprintf(&b, "; not approved: %s", strings.Join(r.Unapproved, ", "))
		}
		if r.Reason != "" {
			fmt.Fprintf(&b, " (%s)", r.Reason)
		}
		if r.Restarts > 0 {
			fmt.Fprintf(&b, "; %d restart(s)", r.Restarts)
		}
	default:
		fmt.Fprintf(&b, "%s: %s", r.Status, r.Reason)
	}
	return b.String()
}

// Set is the loaded extension servers and their tools. A nil *Set has no
// tools and closes nothing.
type Set struct {
	notices *noticeBoard
	tools   []tools.Tool
	reports []ServerReport
	clients []*mcpclient.Client // index-aligned with reports; nil when not loaded

	closeOnce sync.Once
	closeErr  error
}

// Tools returns the approved MCP tools, sorted by qualified name.
func (s *Set) Tools() []tools.Tool {
	if s == nil {
		return nil
	}
	return append([]tools.Tool(nil), s.tools...)
}

// ToolsFor returns the tools like Tools, but registering the artifacts of
// their results with r instead of Options.Artifacts (nil r ⇒ none). A
// worker loads one Set and gives every job its own artifact store this
// way, so one chat's artifact ids never reach another's.
func (s *Set) ToolsFor(r Registrar) []tools.Tool {
	if s == nil {
		return nil
	}
	out := make([]tools.Tool, 0, len(s.tools))
	seen := new(atomic.Int64)
	for _, t := range s.tools {
		if mt, ok := t.(*Tool); ok {
			c := *mt
			c.store = r
			c.seen = seen
			out = append(out, &c)
			continue
		}
		out = append(out, t)
	}
	return out
}

// Notices returns, for a run's tools as ToolsFor made them, a function
// that reports the tool-list changes of their servers that the run's model
// has not been told yet, and marks them told (the same count the notes on
// MCP results use, so each change is told once per run, whichever way
// comes first). It fits agent.Config.Notices. nil ⇒ no MCP tools.
func Notices(ts []tools.Tool) func() string {
	for _, t := range ts {
		if mt, ok := t.(*Tool); ok {
			return func() string { return strings.TrimPrefix(mt.pendingNotices(), "\n") }
		}
	}
	return nil
}

// Report returns one report per configured server, sorted by name, with
// current restart counts.
func (s *Set) Report() []ServerReport {
	if s == nil {
		return nil
	}
	out := make([]ServerReport, len(s.reports))
	for i, r := range s.reports {
		if c := s.clients[i]; c != nil {
			r.Restarts = c.Restarts()
		}
		out[i] = r
	}
	return out
}

// ReportData is Report in the shape of event data: one map per server
// with the ServerReport JSON field names (for run_started's additive
// "mcp_servers" field).
func (s *Set) ReportData() []map[string]any {
	reps := s.Report()
	out := make([]map[string]any, len(reps))
	for i, r := range reps {
		m := map[string]any{
			"name": r.Name, "source": string(r.Source), "required": r.Required,
			"status": string(r.Status), "tools": r.Tools, "restarts": r.Restarts,
		}
		if len(r.Renamed) > 0 {
			ren := make(map[string]any, len(r.Renamed))
			for k, v := range r.Renamed {
				ren[k] = v
			}
			m["renamed"] = ren
		}
		if len(r.Unapproved) > 0 {
			m["unapproved_tools"] = append([]string(nil), r.Unapproved...)
		}
		if r.Grant != "" {
			m["grant"] = string(r.Grant)
		}
		if r.Reason != "" {
			m["reason"] = r.Reason
		}
		if r.ProtocolVersion != "" {
			m["protocol_version"] = r.ProtocolVersion
		}
		if r.StartupMS > 0 {
			m["startup_ms"] = r.StartupMS
		}
		out[i] = m
	}
	return out
}

// RootsChanged tells every loaded server that the roots Options.Roots
// returns have changed (notifications/roots/list_changed), for a worker
// whose next job works elsewhere. Errors of servers that are down are
// joined.
func (s *Set) RootsChanged() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, c := range s.clients {
		if c != nil {
			errs = append(errs, c.RootsChanged())
		}
	}
	return errors.Join(errs...)
}

// Close stops every server (concurrently) and waits for them. It is safe
// to call more than once; later calls return the first result.
func (s *Set) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() { s.closeErr = closeAll(ctx, s.clients) })
	return s.closeErr
}

func closeAll(ctx context.Context, clients []*mcpclient.Client) error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Close(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loader holds one Load's state.
type loader struct {
	notices   *noticeBoard
	opts      Options
	warn      func(string)
	approvals *Approvals // nil: file unusable, nothing persisted
	dirty     bool
	now       func() time.Time
}

// Load parses the mcp_servers sections, asks for approvals, starts every
// enabled and approved server concurrently (each within its startup
// timeout) and adapts its approved tools. Errors: a section that is not an
// object (ErrConfig); a required server that is not loaded
// (ErrRequiredServer, wrapping a *ServerError); an MCP tool whose
// qualified name collides with a built-in or another MCP tool
// (ErrToolCollision). On error every started server is stopped and the
// Set is nil. Optional servers that fail are reported, not errors.
func Load(ctx context.Context, opts Options) (*Set, error) {
	l := &loader{opts: opts, warn: opts.Warn, now: time.Now}
	if l.warn == nil {
		l.warn = func(string) {}
	}
	specs, warnings, err := ParseConfig(opts.Servers.Operator, opts.Servers.Project)
	if err != nil {
		return nil, err
	}
	if opts.Scope != "" {
		// A broken entry is reported once, by the shared load.
		specs = slices.DeleteFunc(specs, func(s ServerSpec) bool {
			if s.Err != nil {
				return opts.Scope == ScopeJob
			}
			return s.Scope != opts.Scope
		})
	}
	for _, w := range warnings {
		l.warn(w)
	}
	selected, err := selectServers(specs, opts.Only)
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return &Set{}, nil
	}
	if opts.Home != "" {
		a, err := ReadApprovals(opts.Home)
		if err != nil {
			l.warn(fmt.Sprintf("%v; it is ignored: nothing counts as approved from it and new approvals are not saved", err))
		} else {
			l.approvals = a
		}
	}

	set := &Set{reports: make([]ServerReport, len(specs)), clients: make([]*mcpclient.Client, len(specs)), notices: &noticeBoard{}}
	l.notices = set.notices
	cfgs := make([]*mcpclient.ServerConfig, len(specs))
	for i := range specs {
		if !selected[specs[i].Name] {
			set.reports[i] = ServerReport{Name: specs[i].Name, Source: specs[i].Source, Required: specs[i].Required,
				Status: StatusSkipped, Reason: ReasonNotSelected}
			continue
		}
		cfgs[i] = l.prepare(ctx, &specs[i], &set.reports[i])
	}
	l.start(ctx, specs, cfgs, set)
	if err := l.adapt(ctx, specs, set); err != nil {
		l.save()
		closeAll(context.WithoutCancel(ctx), set.clients)
		return nil, err
	}
	l.save()
	for i := range specs {
		r := &set.reports[i]
		if specs[i].Required && specs[i].Enabled && selected[specs[i].Name] && (r.Status != StatusLoaded || len(r.Unapproved) > 0) {
			closeAll(context.WithoutCancel(ctx), set.clients)
			phase := "start"
			switch {
			case specs[i].Err != nil:
				phase = "config"
			case r.Status == StatusSkipped || len(r.Unapproved) > 0:
				phase = "approval"
			}
			reason := r.Reason
			if r.Status == StatusLoaded {
				reason = "tools not approved: " + strings.Join(r.Unapproved, ", ") + "; " + ApprovalHint
			}
			return nil, fmt.Errorf("%w: %w", ErrRequiredServer, &ServerError{Server: r.Name, Phase: phase, Err: errors.New(reason)})
		}
	}
	return set, nil
}

// selectServers returns the names Load considers: all with an empty
// only, else the names in only, each of which must be configured.
func selectServers(specs []ServerSpec, only []string) (map[string]bool, error) {
	sel := make(map[string]bool, len(specs))
	if len(only) == 0 {
		for _, s := range specs {
			sel[s.Name] = true
		}
		return sel, nil
	}
	known := make(map[string]bool, len(specs))
	var names []string
	for _, s := range specs {
		known[s.Name] = true
		names = append(names, s.Name)
	}
	for _, n := range only {
		if !known[n] {
			if len(names) == 0 {
				return nil, fmt.Errorf("%w: no server %q: mcp_servers is empty", ErrConfig, clipName(n))
			}
			return nil, fmt.Errorf("%w: no server %q in mcp_servers (configured: %s)", ErrConfig, clipName(n), strings.Join(names, ", "))
		}
		sel[n] = true
	}
	return sel, nil
}

// prepare fills the report's identity, settles config and spawn approval,
// and returns the client config of a server to start (nil: not started).
func (l *loader) prepare(ctx context.Context, s *ServerSpec, r *ServerReport) *mcpclient.ServerConfig {
	*r = ServerReport{Name: s.Name, Source: s.Source, Required: s.Required}
	for _, w := range s.Warnings {
		l.warn(w)
	}
	switch {
	case s.Err != nil:
		r.Status, r.Reason = StatusFailed, s.Err.Error()
		return nil
	case !s.Enabled:
		r.Status, r.Reason = StatusSkipped, ReasonDisabled
		return nil
	}
	key := SpawnKey(s)
	persisted := false
	if l.approvals != nil {
		_, persisted = l.approvals.Servers[key]
	}
	d := DecideSpawn(s.Source, persisted, l.opts.ApproveAll, l.opts.Prompter != nil)
	if d.Ask {
		ok, err := l.opts.Prompter.Confirm(ctx, SpawnQuestion(s))
		switch {
		case err != nil:
			r.Status, r.Reason = StatusSkipped, fmt.Sprintf("not approved: the approval prompt failed: %v", err)
			return nil
		case !ok:
			r.Status, r.Reason = StatusSkipped, "not approved: declined at the prompt"
			return nil
		}
		d = Decision{Allow: true, Grant: GrantPrompt}
		l.remember(l.approvalsServers(), key, Approval{Server: s.Name, Project: s.File})
	}
	if !d.Allow {
		r.Status, r.Reason = StatusSkipped, fmt.Sprintf("not approved: %s declares it and it was never approved; %s", displayPath(s.File), ApprovalHint)
		return nil
	}
	r.Grant = d.Grant
	cfg, warnings, err := s.ClientConfig(l.opts.BaseEnv, l.opts.WorkDir)
	for _, w := range warnings {
		l.warn(w)
	}
	if err != nil {
		r.Status, r.Reason = StatusFailed, err.Error()
		return nil
	}
	cfg.Logger = l.opts.Logger
	cfg.ClientVersion = l.opts.ClientVersion
	cfg.Roots = l.opts.Roots
	if j := l.opts.Jail; j != nil {
		cfg.Start = j.Start
		// A confined server names files the unconfined client reads
		// (artifact refs): only files under this job's root, never another
		// chat's under a root the operator set for every job (jobroots.go).
		cfg.ArtifactRoots = jobArtifactRoots(cfg.ArtifactRoots, j.Spec().Root)
		tmp := j.Spec().TempDir
		cfg.Env = append(slices.DeleteFunc(cfg.Env, func(kv string) bool {
			return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "TMPDIR=")
		}), "HOME="+tmp, "TMPDIR="+tmp)
	}
	name, warn, board := s.Name, l.warn, l.notices
	cfg.OnToolsChanged = func(ch mcpclient.ToolsChange) {
		board.add(ch.String())
		warn(ch.String())
	}
	cfg.OnRestart = func(rr mcpclient.RestartReport) {
		if rr.Err != nil {
			warn(fmt.Sprintf("MCP server %q: restart %d of %d failed: %v", name, rr.Attempt, rr.Max, rr.Err))
			return
		}
		warn(fmt.Sprintf("MCP server %q restarted (restart %d of %d) after: %v", name, rr.Attempt, rr.Max, rr.Cause))
	}
	return &cfg
}

func (l *loader) approvalsServers() map[string]Approval {
	if l.approvals == nil {
		return nil
	}
	return l.approvals.Servers
}

func (l *loader) approvalsTools() map[string]Approval {
	if l.approvals == nil {
		return nil
	}
	return l.approvals.Tools
}

// remember records a prompt grant when the approvals file is usable and
// Home is set.
func (l *loader) remember(m map[string]Approval, key string, a Approval) {
	if m == nil || l.opts.Home == "" {
		return
	}
	a.ApprovedAt = l.now().UTC().Truncate(time.Second)
	m[key] = a
	l.dirty = true
}

func (l *loader) save() {
	if !l.dirty {
		return
	}
	if err := WriteApprovals(l.opts.Home, l.approvals); err != nil {
		l.warn(fmt.Sprintf("approvals not saved (they hold for this run only): %v", err))
	}
	l.dirty = false
}

// start starts every prepared server concurrently.
func (l *loader) start(ctx context.Context, specs []ServerSpec, cfgs []*mcpclient.ServerConfig, set *Set) {
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		if cfg == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			c, err := mcpclient.Start(ctx, *cfg)
			r := &set.reports[i]
			if err != nil {
				r.Status, r.Reason = StatusFailed, err.Error()
				return
			}
			set.clients[i] = c
			r.Status = StatusLoaded
			r.StartupMS = max(time.Since(t0).Milliseconds(), 1)
			r.ProtocolVersion = c.Info().ProtocolVersion
		}()
	}
	wg.Wait()
}

// adapt asks for tool approvals (one prompt per server for its new
// tools), names the approved tools and checks collisions.
func (l *loader) adapt(ctx context.Context, specs []ServerSpec, set *Set) error {
	builtin := make(map[string]bool, len(l.opts.BuiltinNames))
	for _, n := range l.opts.BuiltinNames {
		builtin[n] = true
	}
	var names mcpclient.NameMap
	seen := new(atomic.Int64)
	for i := range specs {
		c := set.clients[i]
		if c == nil {
			continue
		}
		s, r := &specs[i], &set.reports[i]
		var approved, ask []mcpclient.Tool
		for _, t := range c.Tools() {
			key := ToolKey(s, t)
			persisted := false
			if m := l.approvalsTools(); m != nil {
				_, persisted = m[key]
			}
			d := DecideTool(s.AutoApprove, persisted, l.opts.ApproveAll, l.opts.Prompter != nil)
			switch {
			case d.Allow:
				approved = append(approved, t)
			case d.Ask:
				ask = append(ask, t)
			default:
				r.Unapproved = append(r.Unapproved, t.Name)
			}
		}
		if len(ask) > 0 {
			ok, err := l.opts.Prompter.Confirm(ctx, ToolsQuestion(s, ask))
			if err == nil && ok {
				approved = append(approved, ask...)
				for _, t := range ask {
					l.remember(l.approvalsTools(), ToolKey(s, t), Approval{Server: s.Name, Tool: t.Name, Project: projectOf(s)})
				}
			} else {
				for _, t := range ask {
					r.Unapproved = append(r.Unapproved, t.Name)
				}
				if err != nil {
					r.Reason = fmt.Sprintf("the approval prompt failed: %v", err)
				} else {
					r.Reason = "declined at the prompt"
				}
			}
		}
		if len(r.Unapproved) > 0 && r.Reason == "" {
			r.Reason = "tools not approved; " + ApprovalHint
		}
		sort.Strings(r.Unapproved)
		for _, t := range approved {
			q, err := names.Add(s.Name, t.Name)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrToolCollision, err)
			}
			if builtin[q] {
				return fmt.Errorf("%w: MCP server %q tool %q is exposed as %q, which is a built-in tool", ErrToolCollision, s.Name, t.Name, q)
			}
			if q != s.Name+mcpclient.Separator+t.Name {
				if r.Renamed == nil {
					r.Renamed = map[string]string{}
				}
				r.Renamed[t.Name] = q
			}
			set.tools = append(set.tools, &Tool{qualified: q, server: s.Name, mcp: t, class: s.DangerClass, client: c, store: l.opts.Artifacts,
				onProgress: l.opts.OnProgress, emit: l.opts.Emit, notices: set.notices, seen: seen})
		}
		r.Tools = len(approved)
	}
	sort.Slice(set.tools, func(i, j int) bool {
		return set.tools[i].(*Tool).qualified < set.tools[j].(*Tool).qualified
	})
	return nil
}

func projectOf(s *ServerSpec) string {
	if s.Source == SourceProject {
		return s.File
	}
	return ""
}
