// Package archtest keeps odek's import graph pointing the way
// /work/shared/DESIGN.md says: from cmd/* through bot and worker to agent,
// then mcpclient and internal/*, down to the leaves artifacts, events and
// internal/redact, which import only the standard library. agent owns the
// types of its Go API, so the internal packages that implement its
// interfaces (internal/llm, internal/tools, internal/budget) import it.
//
// The rules are data (Rules) and the check is a pure function (Check) over
// a list of packages and their direct imports, so the checker itself is
// table-tested on synthetic graphs. The test in this package feeds it the
// real graph from `go list`. Nothing here is imported by odek; the package
// exists for its test.
//
// Concurrency and ownership: Check and the Rule methods have no state and
// are safe for concurrent use; Check does not retain its arguments.
package archtest

import (
	"fmt"
	"slices"
	"strings"
)

// Std stands for "any standard library package" in Rule.Only.
const Std = "std"

// Package is one package of the module and its direct (non-test) imports,
// as `go list` reports them: full import paths.
type Package struct {
	ImportPath string
	Imports    []string
}

// Rule constrains the imports of the module packages it applies to.
//
// Patterns are module-relative paths: "events" matches that package only;
// "queue/..." matches queue and every package below it; "..." matches every
// package of the module. Entries of Only and Never are patterns of the
// same form for module packages, Std for the standard library, or the
// path of a package outside the module, which also admits the packages
// below it ("golang.org/x/sys" admits "golang.org/x/sys/unix").
type Rule struct {
	// From selects the importing packages.
	From string
	// Except lists importing packages (patterns) the rule does not apply to.
	Except []string
	// Only, when non-empty, is the complete list of what From may import.
	Only []string
	// Never lists what From must not import.
	Never []string
	// Why is shown with a violation.
	Why string
}

// Rules are the import rules of DESIGN.md's layout table. Helper packages
// (events/eventstest, internal/llm/llmtest, …) are outside the leaf rules
// because they import the package they help test, but the Never rules
// cover them through their "/..." patterns.
var Rules = []Rule{
	{From: "events", Only: []string{Std}, Why: "events is a leaf: stdlib only"},
	{From: "artifacts", Only: []string{Std}, Why: "artifacts is a leaf: stdlib only"},
	{From: "internal/redact", Only: []string{Std}, Why: "internal/redact is a leaf: stdlib only"},
	{From: "internal/toolschema", Only: []string{Std}, Why: "internal/toolschema is a leaf: stdlib only"},
	{From: "internal/clip", Only: []string{Std}, Why: "internal/clip is a leaf: stdlib only"},
	{From: "internal/backoff", Only: []string{Std}, Why: "internal/backoff is a leaf: stdlib only"},
	{From: "internal/jsonwire", Only: []string{Std}, Why: "internal/jsonwire is a leaf: stdlib only"},
	{From: "internal/atomicfile", Only: []string{Std}, Why: "internal/atomicfile is a leaf: stdlib only"},
	{From: "internal/llm", Only: []string{Std, "internal/toolschema", "internal/backoff", "internal/jsonwire", "agent"}, Why: "the llm client depends on nothing but the standard library, the schema and backoff leaves and agent's message types"},
	{From: "internal/budget", Only: []string{Std, "agent"}, Why: "internal/budget is stdlib only, plus agent's Budget error type"},
	{
		From: "agent",
		Only: []string{Std, "events", "internal/redact", "internal/clip", "internal/jsonwire", "github.com/sirupsen/logrus"},
		Why:  "agent owns the types of its Go API and imports only leaves: the packages that implement its interfaces (internal/llm, internal/tools, internal/budget) import it",
	},
	{
		From: "internal/sandbox",
		Only: []string{Std, "golang.org/x/sys"},
		Why:  "the sandbox is a leaf: the kernel interfaces through x/sys and nothing of odek; Landlock is applied to the helper's own thread before exec, so go-landlock (and libcap's psx, which makes a cgo build wrap pthread_create) stays out of the binaries (go-landlock remains the tests' judge)",
	},
	{ // issue 24
		From: "internal/telemetry",
		Only: []string{Std, "events", "github.com/sirupsen/logrus", "go.opentelemetry.io/otel"},
		Why:  "telemetry is imported by every layer that traces (worker, cmd, later agent and mcpclient), so it holds nothing of odek but the events types, and of the outside only logrus and the OpenTelemetry SDK",
	},
	{
		From: "mcpclient",
		Only: []string{Std, "artifacts", "events", "internal/backoff", "internal/redact", "internal/telemetry", "github.com/sirupsen/logrus", "golang.org/x/sys", "go.opentelemetry.io/otel"},
		Why:  "mcpclient may use only the leaves, logrus, x/sys and internal/telemetry (its request spans and the trace context it sends a server)",
	},
	{From: "...", Never: []string{"cmd/..."}, Why: "mains are never imported"},
	{From: "queue/...", Never: []string{"worker/...", "bot/..."}, Why: "queue sits below worker and bot"},
	{From: "agent/...", Never: []string{"cmd/...", "worker/...", "bot/...", "queue/..."}, Why: "agent knows nothing of its front ends or the queue"},
	{From: "internal/...", Never: []string{"worker/...", "bot/...", "cmd/..."}, Why: "internal packages sit below the front ends"},
	{
		From:   "internal/...",
		Except: []string{"internal/subagent/...", "internal/host/...", "internal/llm", "internal/tools", "internal/budget", "internal/hooks"},
		Never:  []string{"agent/..."},
		Why:    "internal packages sit below agent (only internal/subagent, which runs child agents, internal/host, which assembles agent.Config, and the implementations of agent's interfaces internal/llm, internal/tools and internal/budget, and internal/hooks, which wraps agent's tools, may import it)",
	},
	{From: "worker/...", Never: []string{"bot/..."}, Why: "worker and bot meet only through queue"},
	{From: "worker/...", Never: []string{"internal/llm/..."}, Why: "a run's output reaches the worker through agent (events and signals, redacted by the run), never from the model client"},
	{From: "bot/...", Never: []string{"worker/...", "agent/..."}, Why: "bot talks to workers through queue, never runs the agent itself"},
	{From: "bot/chatcore", Only: []string{Std, "queue", "events", "bot/tgformat"}, Why: "the chat core decides and holds no Telegram type: no Bot API client, no tgbotapi, no I/O package of the bot"},
	{From: "bot/...", Never: []string{"github.com/redis/go-redis"}, Why: "bot reaches Redis only through queue (jobs, results, progress, the status ledger)"},
	{ // issue 27
		From: "schedule",
		Only: []string{Std, "queue", "internal/luascript", "github.com/robfig/cron/v3", "github.com/redis/go-redis", "github.com/sirupsen/logrus", "golang.org/x/sys"},
		Why:  "schedules sit beside the queue: they store, claim and enqueue fires and know nothing of how a fire runs (agent, worker) or is shown (bot); what a running fire may do (a reminder without a model call, a quiet answer held back, confirmations denied as non_interactive) is decided by the worker, never by a front end's string matching",
	},
	{From: "schedule/scheduletool", Only: []string{Std, "agent", "queue", "schedule"}, Why: "the schedule tool is an agent tool over schedule.Service: no store, client or front end of its own"},
	{From: "bot/...", Never: []string{"schedule/scheduletool"}, Why: "the bot never runs tools: a chat's schedule commands go through schedule.Service, the model's through the worker"},
	{From: "bot/...", Except: []string{"bot/bottest"}, Never: []string{"internal/llm/..."}, Why: "bot reaches the model endpoint only through the small interfaces of its Config (Transcriber, Compactor) that cmd/odek-bot may leave unset"},
}

// Violation is one import that breaks a rule.
type Violation struct {
	Importer, Imported string
	Rule               Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %s: %s", v.Importer, v.Imported, v.Rule.Why)
}

// Check returns every import of pkgs that breaks one of rules, in the
// order of pkgs, then of their imports, then of rules. module is the
// module path; packages outside it are not checked as importers.
func Check(module string, pkgs []Package, rules []Rule) []Violation {
	var out []Violation
	for _, p := range pkgs {
		from, ok := rel(module, p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			for _, r := range rules {
				if r.applies(from) && !r.permits(module, imp) {
					out = append(out, Violation{Importer: p.ImportPath, Imported: imp, Rule: r})
				}
			}
		}
	}
	return out
}

func (r Rule) applies(from string) bool {
	if !match(r.From, from) {
		return false
	}
	return !slices.ContainsFunc(r.Except, func(pat string) bool { return match(pat, from) })
}

// permits reports whether the importer may import imp under r.
func (r Rule) permits(module, imp string) bool {
	if slices.ContainsFunc(r.Never, func(e string) bool { return entryMatches(module, e, imp) }) {
		return false
	}
	if len(r.Only) == 0 {
		return true
	}
	return slices.ContainsFunc(r.Only, func(e string) bool { return entryMatches(module, e, imp) })
}

// entryMatches reports whether imp is covered by an Only/Never entry.
func entryMatches(module, entry, imp string) bool {
	if relImp, ok := rel(module, imp); ok {
		return entry != Std && !isExternal(entry) && match(entry, relImp)
	}
	if entry == Std {
		return IsStd(imp)
	}
	return isExternal(entry) && (imp == entry || strings.HasPrefix(imp, entry+"/"))
}

// isExternal reports whether an entry names a package outside the module:
// its first element has a dot, like every non-standard import path.
func isExternal(entry string) bool {
	first, _, _ := strings.Cut(entry, "/")
	return strings.Contains(first, ".")
}

// IsStd reports whether path is a standard library package (or the cgo
// pseudo-package "C"): its first element has no dot. Module packages must
// be told apart first, with the module path.
func IsStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// rel returns path relative to module, and whether path is in the module.
func rel(module, path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// match reports whether the module-relative path p matches pattern.
func match(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}
