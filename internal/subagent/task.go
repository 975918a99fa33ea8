package subagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/tools"
)

// Limits of the task envelope.
const (
	// MaxTaskBytes bounds a task file.
	MaxTaskBytes = 256 << 10
	// MaxGoalBytes bounds a task's goal; MaxTextBytes its context and guidance each.
	MaxGoalBytes = 16 << 10
	MaxTextBytes = 64 << 10
	// MaxTasks is the most tasks one delegate_tasks call may carry.
	MaxTasks = 8
	// MaxTaskIDBytes bounds a task id.
	MaxTaskIDBytes = 64
)

// ErrInvalidTask is wrapped by every task-file and task-argument error.
var ErrInvalidTask = errors.New("subagent: invalid task")

// Task is the envelope the parent writes for one child. Unknown fields are
// ignored when it is read.
type Task struct {
	// TaskID names the task in events and artifact ids; "" for a
	// stand-alone `odek subagent --goal`.
	TaskID string `json:"task_id,omitempty"`
	// Goal is what the child must achieve. Required.
	Goal string `json:"goal"`
	// Context and Guidance are extra text for the child's first message.
	Context  string `json:"context,omitempty"`
	Guidance string `json:"guidance,omitempty"`
	// MaxRisk is the most severe danger class the child may run (a
	// tools.Class); classes above it are denied. "" ⇒ the operator policy
	// alone decides.
	MaxRisk string `json:"max_risk,omitempty"`
	// ArtifactRoot is the absolute directory staged files are copied to,
	// made 0700 by the parent; with Confine set it must lie outside
	// Confine.Root. "" ⇒ the child returns no artifacts.
	ArtifactRoot string `json:"artifact_root,omitempty"`
	// Model and BaseURL override the configured ones when set.
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
	// TimeoutSeconds bounds the child's whole run; 0 ⇒ no own timeout.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Budget is what the parent had left (budget_inherit "share"); nil ⇒
	// the operator limits alone apply.
	Budget *Budget `json:"budget,omitempty"`
	// Confine, when set, confines the child as its parent was: its file
	// tools and shell stay inside Root (the parent's root), the sandbox
	// never grants Deny, and no project file is read there. nil ⇒ the
	// child is as unconfined as an `odek run`.
	Confine *Confinement `json:"confine,omitempty"`
}

// Confinement is what a confined parent hands its children.
type Confinement struct {
	// Root is the parent's root, the child's working directory.
	Root string `json:"root"`
	// Deny are the paths the parent's sandbox never granted beside
	// ODEK_HOME.
	Deny []string `json:"deny,omitempty"`
}

// Budget is the parent's remaining budget. A zero remaining value means
// "not limited by the parent" unless its exhausted flag is set; a set flag
// is a hard cap of 0.
type Budget struct {
	MaxRuntimeSeconds  float64 `json:"max_runtime_seconds,omitempty"`
	MaxToolCalls       int     `json:"max_tool_calls,omitempty"`
	MaxCostUSD         float64 `json:"max_cost_usd,omitempty"`
	RuntimeExhausted   bool    `json:"runtime_exhausted,omitempty"`
	ToolCallsExhausted bool    `json:"tool_calls_exhausted,omitempty"`
	CostExhausted      bool    `json:"cost_exhausted,omitempty"`
}

// ParseTask decodes and validates a task file. Every error wraps
// ErrInvalidTask and names the field and the observed value or size.
func ParseTask(raw []byte) (Task, error) {
	if len(raw) > MaxTaskBytes {
		return Task{}, fmt.Errorf("%w: task file is %d bytes, limit %d", ErrInvalidTask, len(raw), MaxTaskBytes)
	}
	var t Task
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&t); err != nil {
		return Task{}, fmt.Errorf("%w: want a JSON object with at least \"goal\": %v", ErrInvalidTask, err)
	}
	if dec.More() {
		return Task{}, fmt.Errorf("%w: trailing data after the task object", ErrInvalidTask)
	}
	return t, t.Validate()
}

// Validate checks the fields of t.
func (t *Task) Validate() error {
	if err := checkText("goal", t.Goal, MaxGoalBytes, true); err != nil {
		return err
	}
	if err := checkText("context", t.Context, MaxTextBytes, false); err != nil {
		return err
	}
	if err := checkText("guidance", t.Guidance, MaxTextBytes, false); err != nil {
		return err
	}
	if t.TaskID != "" {
		if err := checkTaskID(t.TaskID); err != nil {
			return err
		}
	}
	if t.MaxRisk != "" && !knownClass(tools.Class(t.MaxRisk)) {
		return fmt.Errorf("%w: max_risk %q: want one of safe, local_write, unknown, network_egress, code_execution, install, system_write, destructive", ErrInvalidTask, t.MaxRisk)
	}
	if t.ArtifactRoot != "" && (!filepath.IsAbs(t.ArtifactRoot) || filepath.Clean(t.ArtifactRoot) != t.ArtifactRoot) {
		return fmt.Errorf("%w: artifact_root %q: want an absolute, clean path", ErrInvalidTask, t.ArtifactRoot)
	}
	if c := t.Confine; c != nil {
		if !filepath.IsAbs(c.Root) || filepath.Clean(c.Root) != c.Root {
			return fmt.Errorf("%w: confine.root %q: want an absolute, clean path", ErrInvalidTask, c.Root)
		}
		if len(c.Deny) > 64 {
			return fmt.Errorf("%w: confine.deny has %d paths, limit 64", ErrInvalidTask, len(c.Deny))
		}
		for _, d := range c.Deny {
			if !filepath.IsAbs(d) {
				return fmt.Errorf("%w: confine.deny %q: want an absolute path", ErrInvalidTask, d)
			}
		}
		// The unconfined child writes into the artifact root: inside the
		// root the confined chat writes, the chat could redirect it.
		if t.ArtifactRoot != "" && (t.ArtifactRoot == c.Root || strings.HasPrefix(t.ArtifactRoot, c.Root+string(filepath.Separator)) ||
			strings.HasPrefix(c.Root, t.ArtifactRoot+string(filepath.Separator))) {
			return fmt.Errorf("%w: artifact_root %q overlaps confine.root %q; it must lie outside the directory the child is confined to", ErrInvalidTask, t.ArtifactRoot, c.Root)
		}
	}
	if t.BaseURL != "" && !(strings.HasPrefix(t.BaseURL, "http://") || strings.HasPrefix(t.BaseURL, "https://")) {
		return fmt.Errorf("%w: base_url: want an http:// or https:// URL", ErrInvalidTask)
	}
	if len(t.Model) > 256 {
		return fmt.Errorf("%w: model is %d bytes, limit 256", ErrInvalidTask, len(t.Model))
	}
	if bad(t.TimeoutSeconds) || t.TimeoutSeconds > 24*3600 {
		return fmt.Errorf("%w: timeout_seconds %v: want 0 to 86400", ErrInvalidTask, t.TimeoutSeconds)
	}
	if b := t.Budget; b != nil {
		if bad(b.MaxRuntimeSeconds) || b.MaxRuntimeSeconds > 100*365*24*3600 || b.MaxToolCalls < 0 || bad(b.MaxCostUSD) {
			return fmt.Errorf("%w: budget: remaining values must be finite and ≥ 0 (runtime %v s, tool calls %d, cost %v USD)",
				ErrInvalidTask, b.MaxRuntimeSeconds, b.MaxToolCalls, b.MaxCostUSD)
		}
	}
	return nil
}

func bad(f float64) bool { return f < 0 || math.IsNaN(f) || math.IsInf(f, 0) }

func checkText(field, s string, maxBytes int, required bool) error {
	if required && strings.TrimSpace(s) == "" {
		return fmt.Errorf("%w: %s is required and must not be blank", ErrInvalidTask, field)
	}
	if len(s) > maxBytes {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalidTask, field, len(s), maxBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidTask, field)
	}
	return nil
}

func checkTaskID(id string) error {
	if len(id) > MaxTaskIDBytes {
		return fmt.Errorf("%w: task_id is %d bytes, limit %d", ErrInvalidTask, len(id), MaxTaskIDBytes)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%w: task_id %q has byte %q at offset %d; want ASCII letters, digits, '_' or '-'", ErrInvalidTask, id, c, i)
		}
	}
	return nil
}

func knownClass(c tools.Class) bool {
	switch c {
	case tools.ClassSafe, tools.ClassLocalWrite, tools.ClassSystemWrite, tools.ClassDestructive,
		tools.ClassCodeExecution, tools.ClassNetworkEgress, tools.ClassInstall, tools.ClassUnknown:
		return true
	}
	return false
}

// Exhausted returns the typed budget error for the first exhausted
// dimension (runtime, tool calls, cost), or nil. Pure.
func (b *Budget) Exhausted() error {
	switch {
	case b == nil:
		return nil
	case b.RuntimeExhausted:
		return &budget.ExceededError{Limit: budget.LimitRuntime, Observed: 0, Max: 0}
	case b.ToolCallsExhausted:
		return &budget.ExceededError{Limit: budget.LimitToolCalls, Observed: 0, Max: 0}
	case b.CostExhausted:
		return &budget.ExceededError{Limit: budget.LimitCostUSD, Observed: 0, Max: 0}
	}
	return nil
}

// Inherit clamps the operator's limits by what the parent had left: each
// dimension the parent limits becomes the minimum of both. It fails fast
// with the typed budget error when a dimension is exhausted. Pure.
func (b *Budget) Inherit(op budget.Limits) (budget.Limits, error) {
	if b == nil {
		return op, nil
	}
	if err := b.Exhausted(); err != nil {
		return op, err
	}
	if b.MaxRuntimeSeconds > 0 {
		d := time.Duration(b.MaxRuntimeSeconds * float64(time.Second))
		if d <= 0 {
			d = time.Nanosecond
		}
		if op.MaxRuntime <= 0 || d < op.MaxRuntime {
			op.MaxRuntime = d
		}
	}
	if b.MaxToolCalls > 0 && (op.MaxToolCalls <= 0 || b.MaxToolCalls < op.MaxToolCalls) {
		op.MaxToolCalls = b.MaxToolCalls
	}
	if b.MaxCostUSD > 0 && (op.MaxCostUSD <= 0 || b.MaxCostUSD < op.MaxCostUSD) {
		op.MaxCostUSD = b.MaxCostUSD
	}
	return op, nil
}

// Remaining is the parent's side of share mode: what is left of limits
// after usage at elapsed runtime, with the exhausted flags set for a
// limited dimension with nothing left. costKnown false (no price for the
// model) leaves cost unlimited, as the parent cannot enforce it either.
// Pure.
func Remaining(l budget.Limits, u budget.Usage, elapsed time.Duration, costKnown bool) *Budget {
	b := &Budget{}
	if l.MaxRuntime > 0 {
		left := l.MaxRuntime - elapsed
		if left <= 0 {
			b.RuntimeExhausted = true
		} else {
			b.MaxRuntimeSeconds = left.Seconds()
		}
	}
	if l.MaxToolCalls > 0 {
		if left := l.MaxToolCalls - u.ToolCalls; left <= 0 {
			b.ToolCallsExhausted = true
		} else {
			b.MaxToolCalls = left
		}
	}
	if l.MaxCostUSD > 0 && costKnown {
		if left := l.MaxCostUSD - u.CostUSD; left <= 0 {
			b.CostExhausted = true
		} else {
			b.MaxCostUSD = left
		}
	}
	return b
}
