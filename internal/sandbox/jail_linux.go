//go:build linux

package sandbox

import (
	"context"
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
// Run, for shell calls, starts each command through the job's
// supervisor instead where the job has a cgroup: the helper started once
// per job, confined once, forking every call's command in a process group
// of its own (supervise_linux.go). The job's cgroup is made at its first
// command.
//
// Enforcement fails closed: if a step fails, the command is not run.
//
// A Jail is safe for concurrent use.
type Jail struct {
	newCgroup func(jobLimits) (*jobCgroup, error)
	stop      chan struct{} // closed by Close: ends watchCPU

	mu       sync.Mutex
	spec     Spec       // its cgroup fields set by prepare
	specJSON string     // spec's JSON, once prepared
	cgTried  bool       // prepare tried to make the cgroup
	cg       *jobCgroup // the job's cgroup; nil ⇒ none (process groups only)
	closed   bool
	cpuOut   bool          // the job used its CPU time (watchCPU)
	groups   []int         // the process groups started
	procs    []*os.Process // the commands started (signalled by pidfd)

	// The job's supervisor (supervise_linux.go), started by the first
	// Run; noSup says why Run uses the helper instead.
	sup   *supClient
	noSup error
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
// newCgroup makes at the job's first command (jobs that run none, most
// of a chat's turns, pay nothing for it).
func jailWith(spec Spec, newCgroup func(jobLimits) (*jobCgroup, error)) *Jail {
	return &Jail{spec: spec, newCgroup: newCgroup, stop: make(chan struct{})}
}

// prepare makes the job's cgroup at its first command, with j.mu held,
// and returns the spec's JSON (which names the cgroup). A cgroup that
// cannot be made leaves the job with process groups only, as before.
func (j *Jail) prepare() (string, error) {
	if !j.cgTried {
		j.cgTried = true
		cg, err := j.newCgroup(jobLimits{procs: j.spec.MaxProcesses, memBytes: int64(j.spec.JobMemoryMB) << 20})
		if err == nil {
			j.cg = cg
			j.spec.Cgroup, j.spec.CgroupsV1 = cg.joins()
			if j.spec.JobCPUSeconds > 0 {
				if _, ok := cg.cpuUsage(); ok {
					go j.watchCPU(time.Duration(j.spec.JobCPUSeconds) * time.Second)
				}
			}
		}
	}
	if j.specJSON == "" {
		b, err := json.Marshal(j.spec)
		if err != nil {
			return "", err
		}
		j.specJSON = string(b)
	}
	return j.specJSON, nil
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

// Spec is the jail's ruleset. Its Cgroup fields are set from the job's
// first command on, where the job has a cgroup.
func (j *Jail) Spec() Spec {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.spec
}

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
	specJSON, err := j.prepare()
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
	groups, procs, sup, cg := j.groups, j.procs, j.sup, j.cg
	j.groups, j.procs, j.sup = nil, nil, nil
	j.mu.Unlock()
	if sup != nil {
		// Gone before the cgroup is emptied: a dying supervisor would
		// stay listed in it, and the cgroup's kill would go round for it.
		sup.end(ErrJailClosed, time.Second)
	}
	// Each command itself, through the pidfd os.Process holds: a helper
	// that has not joined the cgroup yet dies too, and a pid reused
	// since is never signalled.
	for _, p := range procs {
		_ = p.Signal(unix.SIGKILL)
	}
	if cg != nil {
		// Everything the commands started is in the cgroup.
		cg.remove()
		return nil
	}
	for _, pgid := range groups {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	return nil
}

// Run runs cmd (not started; Path and Args, Dir, Env, Stdin, Stdout,
// Stderr and WaitDelay are used) confined by the jail, in a process group
// of its own, and waits for it and its output, as cmd.Run would. When ctx
// is done the command's process group is killed. The status is the
// command's wait status; err is nil when it ran to an end (whatever its
// status), exec.ErrWaitDelay when its output stayed open past WaitDelay
// after it ended (the status is valid then too), else why it did not
// run or its end is unknown. A nil Env is Env(spec, os.Environ()).
//
// Run starts the command through the job's supervisor where it can run
// (supervise_linux.go), else through the helper as Start does (and then
// cancellation is cmd's own, exec.CommandContext's).
func (j *Jail) Run(ctx context.Context, cmd *exec.Cmd) (syscall.WaitStatus, error) {
	s, err := j.supervisor()
	if err != nil {
		return 0, err
	}
	if s != nil {
		ws, err := s.run(ctx, cmd, j.Spec())
		if errors.Is(err, errSupervisorDied) {
			j.mu.Lock()
			cpuOut := j.cpuOut
			j.mu.Unlock()
			if cpuOut {
				// The job used its CPU time: watchCPU killed every
				// process of the job, the supervisor with the command,
				// before the supervisor could report it. The command was
				// killed, as it is without a supervisor.
				return syscall.WaitStatus(syscall.SIGKILL), nil
			}
		}
		return ws, err
	}
	if err := j.Start(cmd); err != nil {
		return 0, err
	}
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		err = nil
	}
	return ws, err
}

// supervisor is the job's running supervisor, started if need be; nil
// (and no error) when the job has none (no cgroup) or it cannot start.
func (j *Jail) supervisor() (*supClient, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return nil, ErrJailClosed
	case j.cpuOut:
		return nil, ErrJobCPU
	case j.sup != nil && !j.sup.isDead():
		return j.sup, nil
	}
	specJSON, err := j.prepare()
	if err != nil {
		return nil, err
	}
	if j.noSup == nil {
		j.noSup = supervisable(j.spec)
	}
	if j.cg == nil || j.noSup != nil {
		return nil, nil
	}
	s, err := startSupervisor(j.spec, specJSON)
	if err != nil {
		j.noSup = err
		return nil, nil
	}
	j.sup = s
	j.procs = append(j.procs, s.proc.Process)
	return s, nil
}

// Supervisor reports the pid of the job's running supervisor, or 0 and
// why commands start through the helper instead (nil: none started yet).
// For tests and diagnostics.
func (j *Jail) Supervisor() (pid int, why error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.sup != nil && !j.sup.isDead():
		return j.sup.pid, nil
	case j.cgTried && j.cg == nil:
		return 0, errors.New("the job has no cgroup")
	}
	return 0, j.noSup
}

// The supervisor is a Go program bound by the spec's limits (they are
// set on it, and its commands inherit them): below these it would fail
// or eat the job's budget, so the job's commands go through the helper.
const (
	// supervisorMinMemoryMB: the Go runtime reserves 1.2–1.6 GB of
	// address space (VmSize; a few MB resident), and RLIMIT_AS below
	// that makes its next mapping fail.
	supervisorMinMemoryMB = 2048
	// supervisorMinProcesses: its threads (up to ~10) count in the
	// job's pids.max.
	supervisorMinProcesses = 64
)

// supervisable is why spec's limits keep a supervisor from serving
// the job (nil: they do not).
func supervisable(spec Spec) error {
	if spec.MaxMemoryMB > 0 && spec.MaxMemoryMB < supervisorMinMemoryMB {
		return fmt.Errorf("sandbox.max_memory_mb %d is below the supervisor's %d", spec.MaxMemoryMB, supervisorMinMemoryMB)
	}
	if spec.MaxProcesses > 0 && spec.MaxProcesses < supervisorMinProcesses {
		return fmt.Errorf("sandbox.max_processes %d is below the supervisor's %d", spec.MaxProcesses, supervisorMinProcesses)
	}
	return nil
}
