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

// Default resource limits of every process a job starts, used where the
// settings leave a limit at 0. Limits bind each process (RLIMIT_*), not
// the job as a whole; see Settings.
const (
	// DefaultMaxMemoryMB is RLIMIT_AS: 4 GiB of address space per process
	// (node, python and Go binaries start well below it).
	DefaultMaxMemoryMB = 4096
	// DefaultMaxCPUSeconds is RLIMIT_CPU: 600 CPU seconds per process,
	// the shell tool's largest timeout.
	DefaultMaxCPUSeconds = 600
	// DefaultMaxProcesses is RLIMIT_NPROC: 1024 processes (and threads)
	// of odek's user.
	DefaultMaxProcesses = 1024
	// DefaultMaxFileSizeMB is RLIMIT_FSIZE: no file written larger than
	// 1 GiB.
	DefaultMaxFileSizeMB = 1024
)

// Default limits of a job as a whole, enforced through its cgroup where
// the worker can make per-job cgroups (CgroupStatus), used where the
// settings leave them at 0.
const (
	// DefaultJobMemoryMB is the memory all of a job's processes may use
	// together (cgroup v2 memory.max, v1 memory.limit_in_bytes): 2 GiB.
	// A job that needs more is OOM-killed inside its own cgroup; the
	// worker and other chats' jobs are not.
	DefaultJobMemoryMB = 2048
	// DefaultJobCPUSeconds is the CPU time all of a job's processes may
	// use together over the job's life (cgroup v2 cpu.stat, v1
	// cpuacct.usage, read every CPUPollInterval): 30 minutes. A job
	// that uses it up is killed, and its later commands are refused.
	DefaultJobCPUSeconds = 1800
)

// Settings are the `sandbox` configuration section, declared once: config
// decodes the files into it (config.Sandbox is this type) and checks and
// merges it by the project and check tags (internal/config/sections.go
// explains them). The zero value is the default: ModeAuto, no TCP port
// reachable for connect or bind, and the Default… resource limits.
type Settings struct {
	// Mode is ModeAuto, ModeOn or ModeOff.
	Mode string `json:"mode" project:"only=on" check:"oneof=|on|off"`
	// Confine turns the sandbox on for `odek run` and `odek continue`
	// (their flag --confine does too).
	Confine bool `json:"confine" project:"on"`
	// AllowConnectPorts lists the TCP ports a job's processes may connect
	// to (Landlock ABI ≥ 4). Empty ⇒ none, and no UDP or ping socket
	// either; non-empty ⇒ UDP and ping sockets are allowed (unmediated:
	// name resolution needs them).
	AllowConnectPorts []int `json:"allow_connect_ports" project:"subset" check:"min=1,max=65535,maxitems=64"`
	// AllowBindPorts lists the TCP ports a job's processes may bind and
	// listen on. Empty ⇒ none, and listen(2) is refused (it would bind a
	// port of its own choosing); non-empty ⇒ listen(2) is allowed, which
	// also lets an unbound socket listen on an ephemeral port.
	AllowBindPorts []int `json:"allow_bind_ports" project:"subset" check:"min=1,max=65535,maxitems=64"`
	// ReadOnlyPaths are extra paths a job's processes may read and
	// execute, beside the system ones (operator file only).
	ReadOnlyPaths []string `json:"read_only_paths" project:"never" check:"abs,maxitems=64"`
	// DenyPaths are never granted, even when they lie inside a system path
	// (a project file may add to them).
	DenyPaths []string `json:"deny_paths" project:"append" check:"abs,maxitems=64"`
	// MaxMemoryMB caps the address space of each process a job starts
	// (RLIMIT_AS), in MiB. 0 ⇒ DefaultMaxMemoryMB.
	MaxMemoryMB int `json:"max_memory_mb" project:"lower" default:"4096" check:"min=0"`
	// MaxCPUSeconds caps the CPU time of each process a job starts
	// (RLIMIT_CPU), in seconds. 0 ⇒ DefaultMaxCPUSeconds.
	MaxCPUSeconds int `json:"max_cpu_seconds" project:"lower" default:"600" check:"min=0"`
	// MaxProcesses caps the processes of odek's user while a job's
	// processes run (RLIMIT_NPROC: counted per user, over every job and
	// container of that uid; the kernel does not enforce it for root),
	// and, where the worker can make per-job cgroups, the processes and
	// threads of the job itself (pids.max; root included).
	// 0 ⇒ DefaultMaxProcesses.
	MaxProcesses int `json:"max_processes" project:"lower" default:"1024" check:"min=0"`
	// MaxFileSizeMB caps the size of any file a job's process writes
	// (RLIMIT_FSIZE), in MiB. 0 ⇒ DefaultMaxFileSizeMB.
	MaxFileSizeMB int `json:"max_file_size_mb" project:"lower" default:"1024" check:"min=0"`
	// JobMemoryMB caps the memory of a job's processes together, in MiB
	// (its cgroup's memory.max). 0 ⇒ DefaultJobMemoryMB.
	JobMemoryMB int `json:"job_memory_mb" project:"lower" default:"2048" check:"min=0"`
	// JobCPUSeconds caps the CPU time of a job's processes together, in
	// seconds, over the job. 0 ⇒ DefaultJobCPUSeconds.
	JobCPUSeconds int `json:"job_cpu_seconds" project:"lower" default:"1800" check:"min=0"`
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
