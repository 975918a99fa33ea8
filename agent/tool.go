package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Tool is one callable tool. Implementations must be safe for concurrent
// calls. Assess must not have side effects. Run receives arguments that are
// valid JSON; it reports failures the model should see as a ToolResult with
// IsError, and returns a Go error only for failures of the call itself
// (cancellation, I/O), which the loop also turns into an error result.
// Run's ctx carries the run (see CallFrom).
type Tool interface {
	Definition() Definition
	Assess(args json.RawMessage) (Assessment, error)
	Run(ctx context.Context, args json.RawMessage) (ToolResult, error)
}

// Definition is what the model is told about a tool.
type Definition struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object describing the arguments; empty
	// means an object without properties.
	Parameters json.RawMessage
}

// Assessment is the pre-execution view of one call: its danger class and
// a low-cardinality audit summary (for events: shell → argv0 and class;
// path tools → path and class; network tools → host and class). Summary
// values are plain strings or string slices; they never hold raw content.
type Assessment struct {
	Class   Class
	Summary map[string]any
	// Ask holds what a person needs to see to decide an approval but what
	// does not belong in the audit events (the shell's command line): it
	// is added to the approval question only, after the run's redactor
	// masked it (issue 26 point 8). nil ⇒ nothing more.
	Ask map[string]string
}

// ToolResult is what a tool call returns to the model.
type ToolResult struct {
	// Text is shown to the model (after redaction and clipping to
	// Config.MaxToolOutputBytes by the loop).
	Text string
	// IsError marks a failed call; Text then explains the failure.
	IsError bool
	// ArtifactCount is the number of artifact refs the result carried.
	ArtifactCount int
}

// Class is the danger class of one tool call.
type Class string

// Danger classes, from harmless to forbidden.
const (
	ClassSafe          Class = "safe"
	ClassLocalWrite    Class = "local_write"
	ClassSystemWrite   Class = "system_write"
	ClassDestructive   Class = "destructive"
	ClassCodeExecution Class = "code_execution"
	ClassNetworkEgress Class = "network_egress"
	ClassInstall       Class = "install"
	ClassUnknown       Class = "unknown"
	ClassBlocked       Class = "blocked"
)

// Action is what the policy does with a call of some class.
type Action string

// Actions.
const (
	ActionAllow  Action = "allow"
	ActionPrompt Action = "prompt"
	ActionDeny   Action = "deny"
)

// Policy maps danger classes to actions. Its zero value behaves like
// DefaultPolicy: a class missing from Classes gets its default action, and
// an empty NonInteractive means deny.
type Policy struct {
	// Classes overrides the action per class (config key
	// dangerous.classes.<class>). Nil or missing entries use the default.
	Classes map[Class]Action
	// NonInteractive replaces ActionPrompt when nobody can be asked
	// (config key dangerous.non_interactive). "" or ActionPrompt means deny.
	NonInteractive Action
}

// defaultActions is DefaultPolicy's table; its keys are the known classes.
var defaultActions = map[Class]Action{
	ClassSafe:          ActionAllow,
	ClassLocalWrite:    ActionAllow,
	ClassSystemWrite:   ActionPrompt,
	ClassDestructive:   ActionDeny,
	ClassCodeExecution: ActionPrompt,
	ClassNetworkEgress: ActionPrompt,
	ClassInstall:       ActionPrompt,
	ClassUnknown:       ActionDeny,
	ClassBlocked:       ActionDeny,
}

func knownClass(c Class) bool {
	_, ok := defaultActions[c]
	return ok
}

// DefaultPolicy allows safe and local_write, denies destructive, unknown
// and blocked, prompts for the rest, and denies prompts when nobody can be
// asked.
func DefaultPolicy() Policy {
	m := make(map[Class]Action, len(defaultActions))
	for c, a := range defaultActions {
		m[c] = a
	}
	return Policy{Classes: m, NonInteractive: ActionDeny}
}

// Decide returns the action for class c. Blocked is always denied, and so
// is a class that is not one of the Class constants; a class missing from
// p.Classes gets its DefaultPolicy action, and an entry holding anything
// but allow, prompt or deny is denied.
func (p Policy) Decide(c Class) Action {
	if c == ClassBlocked || !knownClass(c) {
		return ActionDeny
	}
	a, ok := p.Classes[c]
	if !ok {
		return defaultActions[c]
	}
	switch a {
	case ActionAllow, ActionPrompt, ActionDeny:
		return a
	}
	return ActionDeny
}

// Prompter asks a person to confirm one call. Implementations must be safe
// for concurrent use and return promptly when ctx is done.
type Prompter interface {
	Confirm(ctx context.Context, question string) (bool, error)
}

// PrompterFunc adapts a function to Prompter.
type PrompterFunc func(ctx context.Context, question string) (bool, error)

// Confirm calls f.
func (f PrompterFunc) Confirm(ctx context.Context, question string) (bool, error) {
	return f(ctx, question)
}

// Authorize decides whether tool may run a call assessed as a, as the loop
// does before every call. Prompts go to pr; with a nil pr, p.NonInteractive
// replaces the prompt (and "" or prompt there means deny). A prompter
// error or cancelled ctx denies. The reason names the class and the config
// key dangerous.classes.<class>, so users know what to change; it never
// includes argument values beyond the assessment summary.
func Authorize(ctx context.Context, p Policy, pr Prompter, tool string, a Assessment) (allowed bool, reason string) {
	key := "dangerous.classes." + string(a.Class)
	action := p.Decide(a.Class)
	switch {
	case a.Class == ClassBlocked:
		return false, fmt.Sprintf("tool %s: class blocked is always denied (%s cannot allow it)", tool, key)
	case !knownClass(a.Class):
		return false, fmt.Sprintf("tool %s: class %q is not a known danger class; denied", tool, a.Class)
	}
	if action == ActionPrompt {
		if pr == nil {
			ni := p.NonInteractive
			if ni != ActionAllow {
				return false, fmt.Sprintf("tool %s: class %s needs confirmation but nobody can be asked (dangerous.non_interactive=%s); set %s to allow to permit it", tool, a.Class, nonEmpty(string(ni), "deny"), key)
			}
			return true, fmt.Sprintf("tool %s: class %s allowed without a prompt (dangerous.non_interactive=allow)", tool, a.Class)
		}
		ok, err := pr.Confirm(ctx, question(tool, a))
		switch {
		case errors.Is(err, ErrNoAnswer):
			return false, fmt.Sprintf("tool %s: class %s needs confirmation and nobody answered in time: %v; denied (%s=prompt)", tool, a.Class, err, key)
		case err != nil:
			return false, fmt.Sprintf("tool %s: class %s needs confirmation and the prompt failed: %v (%s=prompt)", tool, a.Class, err, key)
		case !ok:
			return false, fmt.Sprintf("tool %s: class %s declined by the user (%s=prompt)", tool, a.Class, key)
		}
		return true, fmt.Sprintf("tool %s: class %s confirmed by the user (%s=prompt)", tool, a.Class, key)
	}
	if action == ActionAllow {
		return true, fmt.Sprintf("tool %s: class %s allowed by policy (%s=allow)", tool, a.Class, key)
	}
	return false, fmt.Sprintf("tool %s: class %s denied by policy (%s=deny); set %s to prompt or allow to permit it", tool, a.Class, key, key)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// question renders the prompt for one call from its audit summary.
func question(tool string, a Assessment) string {
	keys := make([]string, 0, len(a.Summary))
	for k := range a.Summary {
		if k != "class" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "odek: allow %s (%s", tool, a.Class)
	for _, k := range keys {
		fmt.Fprintf(&b, ", %s=%v", k, a.Summary[k])
	}
	asks := make([]string, 0, len(a.Ask))
	for k := range a.Ask {
		if _, dup := a.Summary[k]; !dup && k != "class" {
			asks = append(asks, k)
		}
	}
	sort.Strings(asks)
	for _, k := range asks {
		fmt.Fprintf(&b, ", %s=%s", k, a.Ask[k])
	}
	b.WriteString(")? [y/N] ")
	return b.String()
}

// ErrNoAnswer is a Prompter's error when nobody answered before the
// prompt's deadline (an approval that expired): the call is denied, and
// the reason says so rather than "declined by the user".
var ErrNoAnswer = errors.New("the approval prompt expired without an answer")

// ErrInvalidToolName is a tool name chat-completions APIs would refuse;
// Run returns it (wrapped) before the first model call.
var ErrInvalidToolName = errors.New("agent: invalid tool name")

// MaxToolNameLen is the longest tool name chat-completions APIs accept.
const MaxToolNameLen = 64

// ValidateToolName reports whether name is 1–64 ASCII letters, digits,
// '_' or '-', the names chat-completions APIs accept. The error wraps
// ErrInvalidToolName and quotes the name.
func ValidateToolName(name string) error {
	if name == "" || len(name) > MaxToolNameLen {
		return fmt.Errorf("%w: %q has %d bytes, want 1 to %d", ErrInvalidToolName, name, len(name), MaxToolNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%w: %q has byte %q at offset %d; allowed are ASCII letters, digits, '_' and '-'", ErrInvalidToolName, name, c, i)
		}
	}
	return nil
}
