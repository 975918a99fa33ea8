//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// enforce applies spec to the calling process: resource limits, the
// Landlock ruleset and the seccomp filter. It fails closed: any step that
// cannot be applied is an error, and the caller must not exec. The
// Landlock domain is the calling thread's (landlock_linux.go): the
// goroutine stays locked to it, and the caller execs from it.
func enforce(spec Spec) error { return enforceWith(spec, specFilter(spec)) }

// enforceWith is enforce with the seccomp filter opts.
func enforceWith(spec Spec, opts filterOpts) error {
	abi := ABI()
	if err := Missing(abi); err != nil {
		return err
	}
	if spec.Root == "" || spec.TempDir == "" {
		return fmt.Errorf("the spec names no root or temp dir")
	}
	// Filesystem, TCP bind/connect, IPC scopes (signals, abstract
	// sockets). The ABI check above guarantees at least the TCP rules.
	if err := restrictThread(spec, abi); err != nil {
		return err
	}
	if err := installSeccomp(opts, unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	return nil
}

// newSession makes the helper (and the command it becomes) the leader of
// a session of its own, without a controlling terminal, unless it leads
// one already (a Jail started it so).
func newSession() error {
	if sid, err := unix.Getsid(0); err == nil && sid == os.Getpid() {
		return nil
	}
	_, err := unix.Setsid()
	return err
}

// specFilter is the seccomp filter of spec.
func specFilter(spec Spec) filterOpts {
	return filterOpts{listen: len(spec.BindPorts) > 0, datagrams: len(spec.ConnectPorts) > 0, lockSession: spec.LockSession}
}

// rlimit is one resource limit of a spec, with the setting it comes from.
type rlimit struct {
	resource int
	value    uint64
	setting  string // "sandbox.max_memory_mb 4096", for errors
}

// rlimits are the spec's resource limits.
func rlimits(spec Spec) []rlimit {
	var out []rlimit
	add := func(res int, n int, unit uint64, key string) {
		if n > 0 {
			out = append(out, rlimit{res, uint64(n) * unit, fmt.Sprintf("sandbox.%s %d", key, n)})
		}
	}
	add(unix.RLIMIT_AS, spec.MaxMemoryMB, 1<<20, "max_memory_mb")
	add(unix.RLIMIT_CPU, spec.MaxCPUSeconds, 1, "max_cpu_seconds")
	add(unix.RLIMIT_NPROC, spec.MaxProcesses, 1, "max_processes")
	add(unix.RLIMIT_FSIZE, spec.MaxFileSizeMB, 1<<20, "max_file_size_mb")
	return out
}

// setLimits applies the spec's resource limits; the helper calls it last,
// right before exec, so the limits bind the command and not the helper.
func setLimits(spec Spec) error {
	for _, l := range rlimits(spec) {
		if err := lowerLimit(l.resource, l.value); err != nil {
			return fmt.Errorf("%s (%s): %v", limitName(l.resource), l.setting, err)
		}
	}
	return nil
}

func limitName(resource int) string {
	switch resource {
	case unix.RLIMIT_AS:
		return "RLIMIT_AS"
	case unix.RLIMIT_CPU:
		return "RLIMIT_CPU"
	case unix.RLIMIT_NPROC:
		return "RLIMIT_NPROC"
	case unix.RLIMIT_FSIZE:
		return "RLIMIT_FSIZE"
	}
	return fmt.Sprintf("resource %d", resource)
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

// helperExec replaces the process with path, without capabilities: the
// thread that executes drops all of them first, and with no_new_privs the
// exec cannot gain any, even as root, so the command cannot raise its
// limits (CAP_SYS_RESOURCE) or use raw sockets. The thread stays locked:
// capabilities are per thread, and the exec must come from this one.
func helperExec(path string, argv, env []string) error {
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %v", err)
	}
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

// ownedBySelfOrRoot reports whether fi's file belongs to root or to this
// process's effective user.
func ownedBySelfOrRoot(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && (st.Uid == 0 || int(st.Uid) == os.Geteuid())
}
