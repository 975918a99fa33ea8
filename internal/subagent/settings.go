package subagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults and caps of Settings.
const (
	DefaultMaxConcurrency = 3
	HardMaxConcurrency    = 8
	DefaultMaxDepth       = 2
	HardMaxDepth          = 8
	DefaultTaskTimeout    = 10 * time.Minute
	HardMaxTaskTimeout    = 24 * time.Hour
)

// Budget inheritance modes (subagent.budget_inherit).
const (
	// InheritOperator: the child enforces the operator limits alone.
	InheritOperator = "operator"
	// InheritShare: the child also enforces what the parent had left.
	InheritShare = "share"
)

// Settings are the `subagent` config section. The zero value means the
// defaults.
type Settings struct {
	// MaxConcurrency bounds children running at once per delegate_tasks
	// call; 0 ⇒ DefaultMaxConcurrency, capped at HardMaxConcurrency.
	MaxConcurrency int
	// MaxDepth bounds nesting: a top-level run has depth 0, its children 1,
	// and a run at MaxDepth may not delegate. 0 ⇒ DefaultMaxDepth.
	MaxDepth int
	// BudgetInherit is InheritOperator or InheritShare; "" ⇒ InheritOperator.
	BudgetInherit string
	// TaskTimeout bounds one child's run; 0 ⇒ DefaultTaskTimeout.
	TaskTimeout time.Duration
}

// wireSettings is the JSON shape; unknown keys are ignored (additive).
type wireSettings struct {
	MaxConcurrency     int     `json:"max_concurrency"`
	MaxDepth           int     `json:"max_depth"`
	BudgetInherit      string  `json:"budget_inherit"`
	TaskTimeoutSeconds float64 `json:"task_timeout_seconds"`
}

func decodeSettings(layer string, raw json.RawMessage) (wireSettings, error) {
	var w wireSettings
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return w, nil
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return w, fmt.Errorf("subagent: %s subagent section: %v", layer, err)
	}
	switch {
	case w.MaxConcurrency < 0 || w.MaxConcurrency > HardMaxConcurrency:
		return w, fmt.Errorf("subagent: %s subagent.max_concurrency %d: want 1 to %d", layer, w.MaxConcurrency, HardMaxConcurrency)
	case w.MaxDepth < 0 || w.MaxDepth > HardMaxDepth:
		return w, fmt.Errorf("subagent: %s subagent.max_depth %d: want 1 to %d", layer, w.MaxDepth, HardMaxDepth)
	case w.BudgetInherit != "" && w.BudgetInherit != InheritOperator && w.BudgetInherit != InheritShare:
		return w, fmt.Errorf("subagent: %s subagent.budget_inherit %q: want \"operator\" or \"share\"", layer, w.BudgetInherit)
	case bad(w.TaskTimeoutSeconds) || w.TaskTimeoutSeconds > HardMaxTaskTimeout.Seconds():
		return w, fmt.Errorf("subagent: %s subagent.task_timeout_seconds %v: want 0 to %v", layer, w.TaskTimeoutSeconds, HardMaxTaskTimeout.Seconds())
	}
	return w, nil
}

// ParseSettings merges the operator's and the project's `subagent`
// sections (raw JSON, nil when absent). The project may only tighten:
// lower max_concurrency, max_depth and task_timeout_seconds, and switch
// budget_inherit to "share"; anything looser is ignored with a warning.
// Pure.
func ParseSettings(operator, project json.RawMessage) (Settings, []string, error) {
	op, err := decodeSettings("operator", operator)
	if err != nil {
		return Settings{}, nil, err
	}
	pr, err := decodeSettings("project", project)
	if err != nil {
		return Settings{}, nil, err
	}
	var warns []string
	s := Settings{
		MaxConcurrency: orInt(op.MaxConcurrency, DefaultMaxConcurrency),
		MaxDepth:       orInt(op.MaxDepth, DefaultMaxDepth),
		BudgetInherit:  op.BudgetInherit,
		TaskTimeout:    DefaultTaskTimeout,
	}
	if op.TaskTimeoutSeconds > 0 {
		s.TaskTimeout = time.Duration(op.TaskTimeoutSeconds * float64(time.Second))
	}
	if s.BudgetInherit == "" {
		s.BudgetInherit = InheritOperator
	}
	lower := func(key string, cur *int, p int) {
		switch {
		case p == 0:
		case p <= *cur:
			*cur = p
		default:
			warns = append(warns, fmt.Sprintf("subagent.%s: project value %d is above the operator's %d; ignored", key, p, *cur))
		}
	}
	lower("max_concurrency", &s.MaxConcurrency, pr.MaxConcurrency)
	lower("max_depth", &s.MaxDepth, pr.MaxDepth)
	if pr.TaskTimeoutSeconds > 0 {
		if d := time.Duration(pr.TaskTimeoutSeconds * float64(time.Second)); d <= s.TaskTimeout {
			s.TaskTimeout = d
		} else {
			warns = append(warns, fmt.Sprintf("subagent.task_timeout_seconds: project value %v is above the operator's %v; ignored", pr.TaskTimeoutSeconds, s.TaskTimeout.Seconds()))
		}
	}
	switch pr.BudgetInherit {
	case "", s.BudgetInherit:
	case InheritShare:
		s.BudgetInherit = InheritShare
	default:
		warns = append(warns, "subagent.budget_inherit: a project may only switch to \"share\"; ignored")
	}
	return s, warns, nil
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// withDefaults fills zero fields and applies the caps.
func (s Settings) withDefaults() Settings {
	s.MaxConcurrency = min(orInt(s.MaxConcurrency, DefaultMaxConcurrency), HardMaxConcurrency)
	s.MaxDepth = min(orInt(s.MaxDepth, DefaultMaxDepth), HardMaxDepth)
	if s.BudgetInherit == "" {
		s.BudgetInherit = InheritOperator
	}
	if s.TaskTimeout <= 0 {
		s.TaskTimeout = DefaultTaskTimeout
	}
	s.TaskTimeout = min(s.TaskTimeout, HardMaxTaskTimeout)
	return s
}

// DepthFromEnviron reads DepthEnv from environ (KEY=VALUE entries, first
// occurrence wins); def when it is absent. A value that is not an integer
// from 0 to HardMaxDepth is an error naming the variable and the value.
// `odek run` uses def 0 (a top-level run), `odek subagent` def 1. Pure.
func DepthFromEnviron(environ []string, def int) (int, error) {
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k != DepthEnv {
			continue
		}
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 || d > HardMaxDepth {
			return 0, fmt.Errorf("subagent: %s=%q: want an integer from 0 to %d", DepthEnv, v, HardMaxDepth)
		}
		return d, nil
	}
	return def, nil
}
