package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
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

// defaultActions is DefaultPolicy's table.
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
	if c == ClassBlocked || !validClass(c) {
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

// Authorize decides whether tool may run a call assessed as a. Prompts go
// to pr; with a nil pr, p.NonInteractive replaces the prompt (and "" or
// prompt there means deny). A prompter error or cancelled ctx denies. The
// reason names the class and the config key dangerous.classes.<class>, so
// users know what to change; it never includes argument values beyond the
// assessment summary.
func Authorize(ctx context.Context, p Policy, pr Prompter, tool string, a Assessment) (allowed bool, reason string) {
	key := "dangerous.classes." + string(a.Class)
	action := p.Decide(a.Class)
	switch {
	case a.Class == ClassBlocked:
		return false, fmt.Sprintf("tool %s: class blocked is always denied (%s cannot allow it)", tool, key)
	case !validClass(a.Class):
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
	b.WriteString(")? [y/N] ")
	return b.String()
}

// ttyPrompter asks on the controlling terminal. One prompt at a time.
type ttyPrompter struct {
	mu sync.Mutex
	f  *os.File
}

// NewTTYPrompter opens /dev/tty for prompts; ok is false when the process
// has no controlling terminal. Prompts are serialised, so concurrent tool
// calls ask one after another; the answer is yes only for "y" or "yes"
// (any case), and anything else, including an empty line, is no. The
// terminal stays open for the life of the process.
func NewTTYPrompter() (Prompter, bool) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	return &ttyPrompter{f: f}, true
}

// Confirm writes question and reads one line. A done ctx interrupts the
// read and returns ctx.Err().
func (t *ttyPrompter) Confirm(ctx context.Context, question string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return confirmOn(ctx, t.f, question)
}

// deadliner is the part of *os.File that confirmOn needs to honour ctx.
type deadliner interface {
	Read([]byte) (int, error)
	Write([]byte) (int, error)
	SetReadDeadline(time.Time) error
}

// maxAnswer bounds the answer line; longer lines are read to the end and
// count as no.
const maxAnswer = 64

func confirmOn(ctx context.Context, f deadliner, question string) (bool, error) {
	if _, err := f.Write([]byte(question)); err != nil {
		return false, fmt.Errorf("tools: write prompt: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer func() {
		stop()
		_ = f.SetReadDeadline(time.Time{})
	}()
	var line []byte
	var b [1]byte
	for {
		n, err := f.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			if len(line) < maxAnswer {
				line = append(line, b[0])
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return false, err
			}
			return false, fmt.Errorf("tools: read answer: %w", err)
		}
	}
	ans := strings.ToLower(strings.TrimSpace(string(line)))
	return ans == "y" || ans == "yes", nil
}
