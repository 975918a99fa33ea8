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
// A Jail is safe for concurrent use; Close releases the ruleset.
type Jail struct {
	spec  Spec
	prog  []unix.SockFilter
	flags uint32
	limit bool   // spec has resource limits: start through the helper
	json  string // spec for the helper

	mu sync.RWMutex
	fd int // the ruleset; -1 once closed
}

// ErrJailClosed is Start's error after Close.
var ErrJailClosed = errors.New("sandbox: the jail is closed")

// NewJail checks the kernel and prepares spec's ruleset. It fails when
// the kernel's Landlock ABI is below RequiredABI or the rules cannot be
// built.
func NewJail(spec Spec) (*Jail, error) {
	if abi := ABI(); abi < RequiredABI {
		return nil, fmt.Errorf("sandbox: Landlock ABI %d found, %d needed (%s)", abi, RequiredABI, abiHint(abi))
	}
	if spec.Root == "" || spec.TempDir == "" {
		return nil, errors.New("sandbox: the spec names no root or temp dir")
	}
	prog, err := seccompProgram()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %v", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	fd, flags, err := landlock.V7.BestEffort().NewRulesetFD(landlockRules(spec)...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: Landlock ruleset: %v", err)
	}
	if fd < 0 {
		return nil, errors.New("sandbox: Landlock enforces nothing on this kernel")
	}
	return &Jail{spec: spec, prog: prog, flags: flags, fd: fd, json: string(b),
		limit: spec.MaxMemoryMB > 0 || spec.MaxProcesses > 0}, nil
}

// Spec is the jail's ruleset.
func (j *Jail) Spec() Spec { return j.spec }

// Start starts cmd (not yet started; Dir, Env, I/O and SysProcAttr set by
// the caller) confined by the jail. It fails closed: if the confinement
// cannot be applied, the command is not started.
func (j *Jail) Start(cmd *exec.Cmd) error {
	if j.limit {
		exe, err := executable()
		if err != nil {
			return fmt.Errorf("sandbox: find the odek executable for the sandbox helper: %v", err)
		}
		if cmd.Err != nil {
			return cmd.Err
		}
		cmd.Args = append([]string{exe, HelperArg, j.json}, cmd.Args...)
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

func (j *Jail) startConfined(cmd *exec.Cmd) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.fd < 0 {
		return ErrJailClosed
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %v", err)
	}
	if err := llsyscall.LandlockRestrictSelf(j.fd, j.flags); err != nil {
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
	if j.fd < 0 {
		return nil
	}
	err := unix.Close(j.fd)
	j.fd = -1
	return err
}
