//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Jail starts the commands of one job confined by one Spec, and ends them
// all when the job ends.
//
// NewJail always makes the process-group Jail described last below: the
// one-domain Jail keeps a thread of odek in the job's domain, which the
// job's processes could reach (see NewJail); it stays, tested, for when
// that domain is held by a process of its own.
//
// One job, one Landlock domain: at its first Start the Jail locks a
// goroutine to an OS thread for good and confines that thread once
// (no_new_privs, landlock_restrict_self and the seccomp filter without
// their all-threads flags, so they bind that thread only, then it drops
// the thread's capabilities). Every command of the job is forked from that
// thread, so all of them, and everything they start, share its domain;
// odek's other threads stay unconfined. Close (job end, cancellation)
// makes the thread call kill(-1, SIGKILL): Landlock's signal scoping lets
// a domain signal only processes of that domain and of domains nested in
// it, so this kills exactly the job's processes — background jobs,
// nohup, setsid and double-forked escapees included, whatever their
// session or parent — and never odek, other jobs, or anything else on the
// machine. kill(-1) is atomic against concurrent forks: a fork racing it
// either is killed or fails.
//
// The resource limits of the spec (RLIMIT_*) belong to a whole process,
// so the thread cannot take them on for its children: each command is
// forked traced (PTRACE_TRACEME), stops at its exec before running one
// instruction of the new program, gets its limits with prlimit(2) from
// the thread, and is detached. If a limit cannot be set the command is
// killed and Start fails.
//
// Every command starts in a session of its own (setsid), without a
// controlling terminal; it leads its own process group, so a caller may
// still kill that group. A SysProcAttr.Setpgid of the caller is dropped
// (a session leader cannot change its group).
//
// On a kernel without signal scoping (Landlock ABI 4 and 5, or where a
// probe, once per process, finds that a confined thread can still signal
// odek's own child) kill(-1) would reach every process of odek's user,
// so the Jail falls back to
// process groups: each command starts through the re-executed helper
// (Command), in a session of its own, under a filter that refuses
// setsid(2) and setpgid(2) (Spec.LockSession), so nothing it starts can
// leave the group; Close kills each group it started.
//
// A Jail is safe for concurrent use.
type Jail struct {
	spec   Spec
	prog   []unix.SockFilter
	scoped bool // signal scoping: one domain, kill(-1) at Close
	limits []threadLimit
	json   func() (string, error)

	mu      sync.Mutex
	closed  bool
	started bool          // the thread was started (scoped)
	initErr error         // the thread could not be confined
	reqs    chan startReq // served by the thread
	quit    chan struct{} // closed by Close
	done    chan struct{} // closed when the thread ended
	groups  []int         // fallback: the process groups started
}

type startReq struct {
	cmd  *exec.Cmd
	errc chan error
}

// threadLimit is an rlimit the thread sets on each child, already
// lowered to odek's own hard limit (a child inherits those).
type threadLimit struct {
	rlimit
	lim unix.Rlimit
}

// ErrJailClosed is Start's error after Close.
var ErrJailClosed = errors.New("sandbox: the jail is closed")

// NewJail checks the kernel and spec. It fails when the kernel's Landlock
// ABI is below RequiredABI; rules that cannot be built (a granted path
// replaced by a file of another kind, say) fail the first Start.
func NewJail(spec Spec) (*Jail, error) {
	abi := ABI()
	if err := Missing(abi); err != nil {
		return nil, err
	}
	// The one-domain Jail (scoped) keeps a thread of this process in the
	// job's domain, where the job's processes may signal it and, before
	// the filter refused it, read and write its memory and take its
	// descriptors: a fresh review of issue 21 reached Redis and killed the
	// worker that way. Until the domain is held by a process of its own
	// that holds no secret, every Jail uses process groups.
	_ = abi >= ScopedABI && signalScoping()
	return makeJail(spec, false)
}

// signalScoping proves, once per process, that a domain built the way a
// Jail builds its own cannot signal a process outside it: a Jail calls
// kill(-1), which without that scoping would reach every process odek's
// user may signal (all of them, for root). The probe's target is a child
// of odek that never runs: it is started traced, so it stops at its exec
// before the first instruction of the program (odek's own binary), is
// probed with signal 0 from a throwaway confined thread, and then killed.
var signalScoping = sync.OnceValue(func() bool { return probeSignalScoping(landlock.V7.BestEffort()) })

// probeSignalScoping is signalScoping's probe with the domain built from
// cfg.
func probeSignalScoping(cfg landlock.Config) bool {
	exe, err := executable()
	if err != nil {
		return false
	}
	res := make(chan bool, 1)
	go func() {
		// The tracer must stay one thread; it is not confined, and is
		// handed back to the runtime afterwards.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		child := exec.Command(exe)
		child.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Setsid: true}
		if err := child.Start(); err != nil {
			res <- false
			return
		}
		defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
		var ws unix.WaitStatus
		if _, err := unix.Wait4(child.Process.Pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
			res <- false
			return
		}
		probe := make(chan bool, 1)
		go func() {
			// Never unlocked: the thread ends confined with this goroutine.
			runtime.LockOSThread()
			fd, flags, err := cfg.NewRulesetFD()
			if err != nil || fd < 0 {
				probe <- false
				return
			}
			defer unix.Close(fd)
			if unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != nil || llsyscall.LandlockRestrictSelf(fd, flags) != nil {
				probe <- false
				return
			}
			probe <- unix.Kill(child.Process.Pid, 0) == unix.EPERM
		}()
		res <- <-probe
	}()
	return <-res
}

// makeJail is NewJail with the mechanism chosen: scoped (one domain,
// kill(-1)) or the process-group fallback. Tests run both.
func makeJail(spec Spec, scoped bool) (*Jail, error) {
	if spec.Root == "" || spec.TempDir == "" {
		return nil, errors.New("sandbox: the spec names no root or temp dir")
	}
	if !scoped {
		spec.LockSession = true
	}
	prog, err := buildSeccompProgram(specFilter(spec))
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %v", err)
	}
	j := &Jail{spec: spec, prog: prog, scoped: scoped,
		json: sync.OnceValues(func() (string, error) {
			b, err := json.Marshal(spec)
			return string(b), err
		})}
	for _, l := range rlimits(spec) {
		var own unix.Rlimit
		if err := unix.Getrlimit(l.resource, &own); err != nil {
			return nil, fmt.Errorf("sandbox: %s: %v", limitName(l.resource), err)
		}
		n := min(l.value, own.Max)
		j.limits = append(j.limits, threadLimit{l, unix.Rlimit{Cur: n, Max: n}})
	}
	return j, nil
}

// Spec is the jail's ruleset.
func (j *Jail) Spec() Spec { return j.spec }

// Start starts cmd (not yet started; Dir, Env, I/O and SysProcAttr set by
// the caller) confined by the jail. It fails closed: if the confinement
// or a limit cannot be applied, the command does not run.
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
	if j.closed {
		j.mu.Unlock()
		return ErrJailClosed
	}
	if !j.scoped {
		defer j.mu.Unlock()
		return j.startHelper(cmd)
	}
	if !j.started {
		j.started = true
		j.reqs, j.quit, j.done = make(chan startReq), make(chan struct{}), make(chan struct{})
		ready := make(chan error, 1)
		go j.serve(ready)
		j.initErr = <-ready
	}
	if j.initErr != nil {
		j.mu.Unlock()
		return j.initErr
	}
	reqs, quit := j.reqs, j.quit
	j.mu.Unlock()
	attr.Ptrace = len(j.limits) > 0
	r := startReq{cmd: cmd, errc: make(chan error, 1)}
	select {
	case reqs <- r:
		return <-r.errc
	case <-quit:
		return ErrJailClosed
	}
}

// startHelper starts cmd through the helper (the fallback without signal
// scoping) and records its process group; j.mu is held.
func (j *Jail) startHelper(cmd *exec.Cmd) error {
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
	return nil
}

// serve is the job's thread: it confines itself, reports to ready, and
// forks every command of the job until Close.
func (j *Jail) serve(ready chan<- error) {
	// Never unlocked: once confined, this thread must not run other
	// goroutines, and the runtime ends it when this goroutine returns.
	runtime.LockOSThread()
	defer close(j.done)
	if err := j.confineThread(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case r := <-j.reqs:
			r.errc <- j.startHere(r.cmd)
		case <-j.quit:
			// Every process of this domain and the domains nested in it;
			// Landlock refuses the signal to everything else, and kill(-1)
			// never signals the caller's own process.
			_ = unix.Kill(-1, unix.SIGKILL)
			return
		}
	}
}

// confineThread confines the calling (locked) thread.
func (j *Jail) confineThread() error {
	fd, flags, err := landlock.V7.BestEffort().NewRulesetFD(landlockRules(j.spec)...)
	if err != nil {
		return fmt.Errorf("sandbox: Landlock ruleset: %v", err)
	}
	if fd < 0 {
		return errors.New("sandbox: Landlock enforces nothing on this kernel")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %v", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %v", err)
	}
	if err := loadSeccomp(j.prog, 0); err != nil {
		return fmt.Errorf("sandbox: seccomp: %v", err)
	}
	// No capabilities for the thread, hence none for its children: with
	// no_new_privs an exec cannot gain any, even as root, so a job run by
	// root cannot raise its limits (CAP_SYS_RESOURCE) or use raw sockets.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: drop capabilities: %v", err)
	}
	return nil
}

// startHere forks cmd from the job's thread and sets its limits while it
// is stopped at its exec.
func (j *Jail) startHere(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		if errors.Is(err, unix.EPERM) && cmd.SysProcAttr.Ptrace {
			return fmt.Errorf("sandbox: the command could not be started traced, which setting its resource limits needs (does a seccomp profile of the container refuse ptrace?): %w", err)
		}
		return err
	}
	if len(j.limits) == 0 {
		return nil
	}
	if err := j.limitTracee(cmd.Process.Pid); err != nil {
		// The process handle is a pidfd: Kill cannot reach a reused pid.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

// limitTracee waits for the traced child pid to stop at its exec, sets
// its limits and detaches it.
func (j *Jail) limitTracee(pid int) error {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox: wait for the command to stop at exec: %v", err)
		}
		break
	}
	if !ws.Stopped() {
		return fmt.Errorf("sandbox: the command ended before its limits were set (%v)", waitText(ws))
	}
	if ws.StopSignal() != unix.SIGTRAP {
		return fmt.Errorf("sandbox: the command stopped at exec with %v, not SIGTRAP", ws.StopSignal())
	}
	// Should odek die before the detach, the command dies too rather than
	// run on without its limits.
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_EXITKILL); err != nil {
		return fmt.Errorf("sandbox: PTRACE_O_EXITKILL on the command: %v", err)
	}
	for _, l := range j.limits {
		if err := unix.Prlimit(pid, l.resource, &l.lim, nil); err != nil {
			return fmt.Errorf("sandbox: %s (%s) on the command: %v", limitName(l.resource), l.setting, err)
		}
	}
	if err := unix.PtraceDetach(pid); err != nil {
		return fmt.Errorf("sandbox: detach the command after setting its limits: %v", err)
	}
	return nil
}

func waitText(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit %d", ws.ExitStatus())
	case ws.Signaled():
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("status %#x", uint32(ws))
}

// Close ends the job: it kills every process the jail's commands left
// (scoped: all of the domain; fallback: every process group started),
// and later Starts fail with ErrJailClosed. It returns once the signal
// was sent; the processes are then dying.
func (j *Jail) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	started, groups := j.started && j.initErr == nil, j.groups
	j.groups = nil
	j.mu.Unlock()
	if j.scoped {
		if started {
			close(j.quit)
			<-j.done
		}
		return nil
	}
	for _, pgid := range groups {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	return nil
}
