package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
)

// Modes of the sandbox section.
const (
	// ModeAuto (""): on for `odek worker` and odek-bot, off for `odek run`
	// unless confine is set.
	ModeAuto = ""
	// ModeOn confines every job, and refuses to start without Landlock.
	ModeOn = "on"
	// ModeOff runs jobs unconfined. Operator file only; every start of a
	// worker or bot then logs a warning.
	ModeOff = "off"
)

// Limits of the settings.
const (
	// MaxPaths bounds read_only_paths and deny_paths.
	MaxPaths = 64
	// MaxPorts bounds allow_connect_ports.
	MaxPorts = 64
)

// Settings are the `sandbox` configuration section. The zero value is the
// default: ModeAuto, no TCP port reachable, no memory or process limit.
type Settings struct {
	// Mode is ModeAuto, ModeOn or ModeOff.
	Mode string `json:"mode"`
	// Confine turns the sandbox on for `odek run` and `odek continue`
	// (their flag --confine does too).
	Confine bool `json:"confine"`
	// AllowConnectPorts lists the TCP ports a job's processes may connect
	// to (Landlock ABI ≥ 4). Empty ⇒ none.
	AllowConnectPorts []int `json:"allow_connect_ports"`
	// ReadOnlyPaths are extra paths a job's processes may read and
	// execute, beside the system ones (operator file only).
	ReadOnlyPaths []string `json:"read_only_paths"`
	// DenyPaths are never granted, even when they lie inside a system path
	// (a project file may add to them).
	DenyPaths []string `json:"deny_paths"`
	// MaxMemoryMB caps the address space of each process a job starts
	// (RLIMIT_AS), in MiB. 0 ⇒ no cap.
	MaxMemoryMB int `json:"max_memory_mb"`
	// MaxProcesses caps the processes of odek's user while a job's shell
	// runs (RLIMIT_NPROC; not enforced for root). 0 ⇒ no cap.
	MaxProcesses int `json:"max_processes"`
}

// Active reports whether the sandbox confines runs of a surface: server
// surfaces (worker, bot) are confined unless the mode is off; `odek run`
// only when asked (mode on, confine, or its flag).
func (s Settings) Active(server bool) bool {
	switch s.Mode {
	case ModeOff:
		return false
	case ModeOn:
		return true
	}
	return server || s.Confine
}

func decode(layer string, raw json.RawMessage) (Settings, error) {
	var s Settings
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("sandbox: %s sandbox section: %v", layer, err)
	}
	switch s.Mode {
	case ModeAuto, ModeOn, ModeOff:
	default:
		return s, fmt.Errorf("sandbox: %s sandbox.mode %q: want \"on\" or \"off\" (or leave it unset)", layer, s.Mode)
	}
	if len(s.AllowConnectPorts) > MaxPorts {
		return s, fmt.Errorf("sandbox: %s sandbox.allow_connect_ports has %d ports: at most %d", layer, len(s.AllowConnectPorts), MaxPorts)
	}
	for _, p := range s.AllowConnectPorts {
		if p < 1 || p > 65535 {
			return s, fmt.Errorf("sandbox: %s sandbox.allow_connect_ports: port %d is not in 1-65535", layer, p)
		}
	}
	for name, paths := range map[string][]string{"read_only_paths": s.ReadOnlyPaths, "deny_paths": s.DenyPaths} {
		if len(paths) > MaxPaths {
			return s, fmt.Errorf("sandbox: %s sandbox.%s has %d paths: at most %d", layer, name, len(paths), MaxPaths)
		}
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				return s, fmt.Errorf("sandbox: %s sandbox.%s: %q is not an absolute path", layer, name, p)
			}
		}
	}
	if s.MaxMemoryMB < 0 {
		return s, fmt.Errorf("sandbox: %s sandbox.max_memory_mb %d: want 0 (no cap) or more", layer, s.MaxMemoryMB)
	}
	if s.MaxProcesses < 0 {
		return s, fmt.Errorf("sandbox: %s sandbox.max_processes %d: want 0 (no cap) or more", layer, s.MaxProcesses)
	}
	return s, nil
}

// FromSections merges the operator's and the project's `sandbox` sections
// (raw JSON, nil when absent). The operator file sets the sandbox; a
// project file may only tighten it: turn it on (mode on, confine), drop
// ports from the operator's list, add deny paths and lower the memory and
// process caps. Anything looser is ignored with a warning. Pure.
func FromSections(operator, project json.RawMessage) (Settings, []string, error) {
	op, err := decode("operator", operator)
	if err != nil {
		return Settings{}, nil, err
	}
	pr, err := decode("project", project)
	if err != nil {
		return Settings{}, nil, err
	}
	var warns []string
	s := op
	switch pr.Mode {
	case ModeOn:
		s.Mode = ModeOn
	case ModeOff:
		warns = append(warns, "sandbox: the project file may not turn the sandbox off; sandbox.mode \"off\" ignored")
	}
	if pr.Confine {
		s.Confine = true
	}
	if pr.AllowConnectPorts != nil {
		var kept []int
		for _, p := range pr.AllowConnectPorts {
			if slices.Contains(op.AllowConnectPorts, p) {
				kept = append(kept, p)
			} else {
				warns = append(warns, fmt.Sprintf("sandbox: the project file may only remove ports from sandbox.allow_connect_ports; port %d ignored", p))
			}
		}
		s.AllowConnectPorts = kept
	}
	if len(pr.ReadOnlyPaths) > 0 {
		warns = append(warns, "sandbox: sandbox.read_only_paths is operator config; the project file's entries are ignored")
	}
	s.DenyPaths = append(slices.Clip(op.DenyPaths), pr.DenyPaths...)
	if len(s.DenyPaths) > MaxPaths {
		return Settings{}, nil, fmt.Errorf("sandbox: sandbox.deny_paths of both files has %d paths: at most %d", len(s.DenyPaths), MaxPaths)
	}
	s.MaxMemoryMB = lower(op.MaxMemoryMB, pr.MaxMemoryMB, "max_memory_mb", &warns)
	s.MaxProcesses = lower(op.MaxProcesses, pr.MaxProcesses, "max_processes", &warns)
	return s, warns, nil
}

// lower merges a cap where 0 means none: the project may set one where
// the operator set none, or lower the operator's.
func lower(op, pr int, name string, warns *[]string) int {
	switch {
	case pr == 0:
		return op
	case op == 0 || pr <= op:
		return pr
	}
	*warns = append(*warns, fmt.Sprintf("sandbox: the project's sandbox.%s %d is above the operator's %d; ignored", name, pr, op))
	return op
}
