//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Jail starts the commands of one job confined by one Spec, and ends them
// all when the job ends.
//
// Each command starts through the re-executed helper (Command): the helper
// makes itself the leader of a session of its own (no controlling
// terminal), applies the Landlock ruleset, the seccomp filter and the
// spec's resource limits to itself, drops every capability and becomes the
// command. The filter refuses setsid(2) and setpgid(2) (Spec.LockSession),
// so nothing the command starts — `cmd &`, nohup, setsid, double forks —
// can leave its process group; Close kills every group the Jail started.
// Where per-job cgroups work (cgroup_linux.go), the Jail has one: the
// helper joins it before confining itself, pids.max bounds the job's
// processes (for root too), and Close kills the cgroup and each command
// by its pidfd instead of the groups, whose numbers could be reused.
// No thread of odek is ever in a job's Landlock domain: a job's processes
// can signal, and could otherwise read, processes of their own domain.
// (For a while a job was one domain held by a locked thread of the
// worker, ended with kill(-1) under Landlock's signal scoping; a review
// of issue 21 read the worker's memory and took its Redis connections
// through that thread. docs/SECURITY.md tells the story.)
//
// Enforcement fails closed: if a step fails, the command is not run.
//
// A Jail is safe for concurrent use.
type Jail struct {
	spec Spec
	json func() (string, error)

	cg   *jobCgroup    // the job's cgroup; nil ⇒ none (process groups only)
	stop chan struct{} // closed by Close: ends watchCPU

	mu     sync.Mutex
	closed bool
	cpuOut bool          // the job used its CPU time (watchCPU)
	groups []int         // the process groups started
	procs  []*os.Process // the commands started (signalled by pidfd)
}

// ErrJailClosed is Start's error after Close.
var ErrJailClosed = errors.New("sandbox: the jail is closed")

// NewJail checks the kernel and spec. It fails when the kernel's Landlock
// ABI is below RequiredABI or the spec names no root or temp dir; rules
// that cannot be built (a granted path replaced by a file of another kind,
// say) fail the Start.
func NewJail(spec Spec) (*Jail, error) {
	if err := Missing(ABI()); err != nil {
		return nil, err
	}
	if spec.Root == "" || spec.TempDir == "" {
		return nil, errors.New("sandbox: the spec names no root or temp dir")
	}
	spec.LockSession = true
	if _, err := buildSeccompProgram(specFilter(spec)); err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %v", err)
	}
	// A cgroup of the job's own where this process can make one: the
	// bound on its processes that holds for root, and the way to end them
	// all. Without, RLIMIT_NPROC and the process groups.
	return jailWith(spec, newJobCgroup), nil
}

// jailWith is NewJail's Jail of a checked spec, whose cgroup (if any)
// newCgroup makes.
func jailWith(spec Spec, newCgroup func(jobLimits) (*jobCgroup, error)) *Jail {
	cg, err := newCgroup(jobLimits{procs: spec.MaxProcesses, memBytes: int64(spec.JobMemoryMB) << 20})
	if err == nil {
		spec.Cgroup, spec.CgroupsV1 = cg.joins()
	} else {
		cg = nil
	}
	j := &Jail{spec: spec, cg: cg, stop: make(chan struct{}), json: sync.OnceValues(func() (string, error) {
		b, err := json.Marshal(spec)
		return string(b), err
	})}
	if cg != nil && spec.JobCPUSeconds > 0 {
		if _, ok := cg.cpuUsage(); ok {
			go j.watchCPU(time.Duration(spec.JobCPUSeconds) * time.Second)
		}
	}
	return j
}

// CPUPollInterval is how often a Jail reads the CPU time its job used.
const CPUPollInterval = 250 * time.Millisecond

// ErrJobCPU is Start's error once the job used its CPU time
// (Spec.JobCPUSeconds).
var ErrJobCPU = errors.New("sandbox: the job used up its CPU time (sandbox.job_cpu_seconds); its processes were killed")

// watchCPU kills the job's processes once they have used limit of CPU
// time together, and refuses its later commands.
func (j *Jail) watchCPU(limit time.Duration) {
	t := time.NewTicker(CPUPollInterval)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
		}
		used, ok := j.cg.cpuUsage()
		if !ok || used < limit {
			continue
		}
		j.mu.Lock()
		j.cpuOut = true
		j.mu.Unlock()
		j.cg.kill()
		return
	}
}

// Spec is the jail's ruleset.
func (j *Jail) Spec() Spec { return j.spec }

// Start starts cmd (not yet started; Dir, Env, I/O and SysProcAttr set by
// the caller) confined by the jail, in a session and process group of its
// own (a caller's Setpgid is dropped: a session leader cannot change its
// group). It fails closed: if the confinement or a limit cannot be
// applied, the command does not run.
func (j *Jail) Start(cmd *exec.Cmd) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		a := *cmd.SysProcAttr
		attr = &a
	}
	attr.Setsid, attr.Setpgid, attr.Pgid, attr.Setctty, attr.Foreground = true, false, 0, false, false
	cmd.SysProcAttr = attr
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrJailClosed
	}
	if j.cpuOut {
		return ErrJobCPU
	}
	exe, err := executable()
	if err != nil {
		return fmt.Errorf("sandbox: find the odek executable for the sandbox helper: %v", err)
	}
	specJSON, err := j.json()
	if err != nil {
		return err
	}
	cmd.Args = append([]string{exe, HelperArg, specJSON}, cmd.Args...)
	cmd.Path = exe
	if err := cmd.Start(); err != nil {
		return err
	}
	j.groups = append(j.groups, cmd.Process.Pid)
	j.procs = append(j.procs, cmd.Process)
	return nil
}

// Close ends the job: it kills every process group the jail's commands
// started, and later Starts fail with ErrJailClosed. It returns once the
// signals were sent; the processes are then dying.
func (j *Jail) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	close(j.stop)
	groups, procs := j.groups, j.procs
	j.groups, j.procs = nil, nil
	j.mu.Unlock()
	// Each command itself, through the pidfd os.Process holds: a helper
	// that has not joined the cgroup yet dies too, and a pid reused
	// since is never signalled.
	for _, p := range procs {
		_ = p.Signal(unix.SIGKILL)
	}
	if j.cg != nil {
		// Everything the commands started is in the cgroup.
		j.cg.remove()
		return nil
	}
	for _, pgid := range groups {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	return nil
}
