//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version of the running kernel, 0 when
// Landlock is missing or disabled.
func ABI() int {
	v, err := llsyscall.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// enforce applies spec to the calling process: resource limits, the
// Landlock ruleset and the seccomp filter. It fails closed: any step that
// cannot be applied is an error, and the caller must not exec.
func enforce(spec Spec) error {
	if err := Missing(ABI()); err != nil {
		return err
	}
	if spec.Root == "" || spec.TempDir == "" {
		return fmt.Errorf("the spec names no root or temp dir")
	}
	rules := landlockRules(spec)
	// V7: filesystem, TCP bind/connect, IPC scopes (signals, abstract
	// sockets). The ABI check above guarantees at least the TCP rules.
	if err := landlock.V7.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock_restrict_self: %v", err)
	}
	if err := installSeccomp(unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	return nil
}

// landlockRules are the Landlock rules of spec.
func landlockRules(spec Spec) []landlock.Rule {
	// NewSpec sorted the read-only paths into directories and files:
	// directory rights on a file are invalid.
	rules := []landlock.Rule{
		landlock.RWDirs(spec.Root, spec.TempDir).WithRefer(),
		landlock.RODirs(spec.ReadOnly...),
		landlock.ROFiles(spec.ReadOnlyFiles...),
		landlock.RWFiles(spec.Devices...).IgnoreIfMissing(),
	}
	for _, p := range spec.ConnectPorts {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	return rules
}

// setLimits applies the spec's resource limits; the helper calls it last,
// right before exec, so the limits bind the command and not the helper.
func setLimits(spec Spec) error {
	if spec.MaxMemoryMB > 0 {
		if err := lowerLimit(unix.RLIMIT_AS, uint64(spec.MaxMemoryMB)<<20); err != nil {
			return fmt.Errorf("RLIMIT_AS (sandbox.max_memory_mb %d): %v", spec.MaxMemoryMB, err)
		}
	}
	if spec.MaxProcesses > 0 {
		if err := lowerLimit(unix.RLIMIT_NPROC, uint64(spec.MaxProcesses)); err != nil {
			return fmt.Errorf("RLIMIT_NPROC (sandbox.max_processes %d): %v", spec.MaxProcesses, err)
		}
	}
	return nil
}

// lowerLimit sets resource to n, or leaves it at its hard limit when
// that is lower already (a limit can only be lowered).
func lowerLimit(resource int, n uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(resource, &cur); err != nil {
		return err
	}
	n = min(n, cur.Max)
	return unix.Setrlimit(resource, &unix.Rlimit{Cur: n, Max: n})
}

// abiHint says what a too-small ABI means for the operator.
func abiHint(abi int) string {
	if abi == 0 {
		return "Landlock is not enabled in this kernel (it needs CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= boot parameter)"
	}
	return "TCP connect rules need Linux 6.7 or newer"
}

// Seccomp actions and the offsets of struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg2 = 16 + 2*8 // low 32 bits of args[2] on little-endian
	// ipprotoMPTCP is IPPROTO_MPTCP: Landlock's TCP rules do not cover
	// Multipath TCP sockets, so creating one is refused.
	ipprotoMPTCP = 262
)

// installSeccomp refuses, for this process and what it executes, the
// syscalls that would get around the Landlock TCP rules: socket(2) with
// IPPROTO_MPTCP, io_uring_setup(2) (its operations bypass seccomp), and
// every syscall of another architecture's ABI (32-bit compat, x32), where
// the same numbers mean other calls.
func installSeccomp(flags uintptr) error {
	prog, err := seccompProgram()
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return e
	}
	return nil
}

// seccompProgram is the filter installSeccomp installs.
var seccompProgram = sync.OnceValues(buildSeccompProgram)

func buildSeccompProgram() ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, errors.New("no filter for this architecture (amd64 and arm64 only)")
	}
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	errno := func(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	prog := []unix.SockFilter{
		stmt(ld, offArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, errno(unix.ENOSYS)), // a foreign ABI
		stmt(ld, offNr),
		jump(jge, x32Bit, 0, 1),
		stmt(ret, errno(unix.ENOSYS)), // x32 numbers on amd64
		jump(jeq, unix.SYS_IO_URING_SETUP, 0, 1),
		stmt(ret, errno(unix.ENOSYS)),
		jump(jeq, unix.SYS_SOCKET, 0, 3),
		stmt(ld, offArg2),
		jump(jeq, ipprotoMPTCP, 0, 1),
		stmt(ret, errno(unix.EPROTONOSUPPORT)),
		stmt(ret, allow),
	}
	return prog, nil
}

// helperExec replaces the process with path.
func helperExec(path string, argv, env []string) error {
	return syscall.Exec(path, argv, env)
}

// reachable reports whether this process may read path, or, for a
// directory, enter it (access(2) with the real ids, as the sandboxed
// command will have them).
func reachable(path string) bool {
	if unix.Access(path, unix.R_OK) == nil {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir() && unix.Access(path, unix.X_OK) == nil
}
