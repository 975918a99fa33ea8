package subagent

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults and caps of Settings.
const (
	DefaultMaxConcurrency = 3
	HardMaxConcurrency    = 8
	DefaultMaxProcesses   = 8
	HardMaxProcesses      = 64
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

// Settings are the `subagent` config section, declared once: config
// decodes the files into it (config.Subagent is this type) and checks and
// merges it by the project, check and default tags
// (internal/config/sections.go explains them; a config test keeps the
// default tags equal to the Default… constants). The zero value means
// the defaults.
type Settings struct {
	// MaxConcurrency bounds children running at once per delegate_tasks
	// call; 0 ⇒ DefaultMaxConcurrency, capped at HardMaxConcurrency.
	MaxConcurrency int `json:"max_concurrency" project:"lower" default:"3" check:"min=0,max=8"`
	// MaxProcesses bounds the sub-agent processes of every depth running
	// at once under one top-level process (a worker, an `odek run`): a
	// top-level run's task waits for a free slot, a nested run's task is
	// refused at once (see slots.go). 0 ⇒ DefaultMaxProcesses, capped at
	// HardMaxProcesses. Only the top-level process's value counts.
	MaxProcesses int `json:"max_processes" project:"lower" default:"8" check:"min=0,max=64"`
	// MaxDepth bounds nesting: a top-level run has depth 0, its children 1,
	// and a run at MaxDepth may not delegate. 0 ⇒ DefaultMaxDepth.
	MaxDepth int `json:"max_depth" project:"lower" default:"2" check:"min=0,max=8"`
	// BudgetInherit is InheritOperator or InheritShare; "" ⇒
	// InheritOperator. A project may only switch to InheritShare.
	BudgetInherit string `json:"budget_inherit" project:"only=share" check:"oneof=|operator|share"`
	// TaskTimeoutSeconds bounds one child's run, in seconds; 0 ⇒
	// DefaultTaskTimeout, capped at HardMaxTaskTimeout.
	TaskTimeoutSeconds float64 `json:"task_timeout_seconds" project:"lower" default:"600" check:"min=0,max=86400"`
}

// TaskTimeout is TaskTimeoutSeconds as a Duration.
func (s Settings) TaskTimeout() time.Duration {
	return time.Duration(s.TaskTimeoutSeconds * float64(time.Second))
}

func orInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// WithDefaults fills zero fields and applies the caps.
func (s Settings) WithDefaults() Settings {
	s.MaxConcurrency = min(orInt(s.MaxConcurrency, DefaultMaxConcurrency), HardMaxConcurrency)
	s.MaxProcesses = min(orInt(s.MaxProcesses, DefaultMaxProcesses), HardMaxProcesses)
	s.MaxDepth = min(orInt(s.MaxDepth, DefaultMaxDepth), HardMaxDepth)
	if s.BudgetInherit == "" {
		s.BudgetInherit = InheritOperator
	}
	if s.TaskTimeoutSeconds <= 0 {
		s.TaskTimeoutSeconds = DefaultTaskTimeout.Seconds()
	}
	s.TaskTimeoutSeconds = min(s.TaskTimeoutSeconds, HardMaxTaskTimeout.Seconds())
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
