package sandbox

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
