//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Jail starts commands confined by one Spec. NewJail builds the Landlock
// ruleset and the seccomp filter once; each Start confines one fresh OS
// thread with them (no_new_privs, landlock_restrict_self and the seccomp
// filter without their all-threads flags, so they bind that thread only)
// and forks the command from it, so the command inherits the
// confinement and odek itself stays unconfined. The thread is never
// handed back to the Go scheduler: it ends with the goroutine that
// started the command. A spec with resource limits cannot work that way
// (rlimits belong to the whole process): its commands are started
// through the re-executed helper (Command), which sets them before exec.
//
// The ruleset is built at the first Start, so a job that never starts a
// process costs nothing more than the check NewJail makes.
//
// A Jail is safe for concurrent use; Close releases the ruleset.
type Jail struct {
	spec  Spec
	prog  []unix.SockFilter
	limit bool // spec has resource limits: start through the helper
	json  func() (string, error)

	mu     sync.RWMutex
	built  bool   // the ruleset was built (fd, flags, err valid)
	fd     int    // the ruleset; -1 before it is built and once closed
	flags  uint32 // restrict-self flags that go with fd
	err    error  // why the ruleset could not be built
	closed bool
}

// ErrJailClosed is Start's error after Close.
var ErrJailClosed = errors.New("sandbox: the jail is closed")

// NewJail checks the kernel and spec. It fails when the kernel's Landlock
// ABI is below RequiredABI; rules that cannot be built (a granted path
// replaced by a file of another kind, say) fail the first Start.
func NewJail(spec Spec) (*Jail, error) {
	if err := Missing(ABI()); err != nil {
		return nil, err
	}
	if spec.Root == "" || spec.TempDir == "" {
		return nil, errors.New("sandbox: the spec names no root or temp dir")
	}
	prog, err := seccompProgram()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %v", err)
	}
	return &Jail{spec: spec, prog: prog, fd: -1,
		limit: spec.MaxMemoryMB > 0 || spec.MaxProcesses > 0,
		json: sync.OnceValues(func() (string, error) {
			b, err := json.Marshal(spec)
			return string(b), err
		})}, nil
}

// Spec is the jail's ruleset.
func (j *Jail) Spec() Spec { return j.spec }

// Start starts cmd (not yet started; Dir, Env, I/O and SysProcAttr set by
// the caller) confined by the jail. It fails closed: if the confinement
// cannot be applied, the command is not started.
func (j *Jail) Start(cmd *exec.Cmd) error {
	j.mu.RLock()
	closed := j.closed
	j.mu.RUnlock()
	if closed {
		return ErrJailClosed
	}
	if j.limit {
		exe, err := executable()
		if err != nil {
			return fmt.Errorf("sandbox: find the odek executable for the sandbox helper: %v", err)
		}
		if cmd.Err != nil {
			return cmd.Err
		}
		specJSON, err := j.json()
		if err != nil {
			return err
		}
		cmd.Args = append([]string{exe, HelperArg, specJSON}, cmd.Args...)
		cmd.Path = exe
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: once confined, this thread must not run other
		// goroutines, and the runtime ends it when this goroutine returns.
		runtime.LockOSThread()
		errc <- j.startConfined(cmd)
	}()
	return <-errc
}

// ruleset builds the ruleset once and returns it; the caller holds j.mu
// for reading.
func (j *Jail) ruleset() (int, uint32, error) {
	if !j.built {
		j.mu.RUnlock()
		j.mu.Lock()
		if !j.built && !j.closed {
			fd, flags, err := landlock.V7.BestEffort().NewRulesetFD(landlockRules(j.spec)...)
			switch {
			case err != nil:
				j.err = fmt.Errorf("sandbox: Landlock ruleset: %v", err)
			case fd < 0:
				j.err = errors.New("sandbox: Landlock enforces nothing on this kernel")
			default:
				j.fd, j.flags = fd, flags
			}
			j.built = true
		}
		j.mu.Unlock()
		j.mu.RLock()
	}
	if j.closed {
		return -1, 0, ErrJailClosed
	}
	return j.fd, j.flags, j.err
}

func (j *Jail) startConfined(cmd *exec.Cmd) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	fd, flags, err := j.ruleset()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %v", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %v", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(j.prog)), Filter: &j.prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("sandbox: seccomp: %v", e)
	}
	return cmd.Start()
}

// Close releases the ruleset; later Starts fail with ErrJailClosed.
// Commands already started stay confined.
func (j *Jail) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.fd < 0 {
		return nil
	}
	err := unix.Close(j.fd)
	j.fd = -1
	return err
}
