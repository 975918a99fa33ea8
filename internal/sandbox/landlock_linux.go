//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock through golang.org/x/sys/unix, on the calling thread only.
//
// The helper restricts itself and then executes the command: exec keeps
// the Landlock domain of the thread that calls it and ends every other
// thread, so restricting that one thread is enough. go-landlock restricts
// every thread instead, through libcap's psx, and psx in a cgo build wraps
// pthread_create for the whole binary (2–4 MiB of resident memory in every
// odek process, measured in docs/BENCHMARKS.md). The calling goroutine is
// locked to its thread from here until the exec and never unlocked.
//
// What is handled follows go-landlock's V7.BestEffort(), which odek used
// before: every filesystem right up to ioctl_dev, TCP bind and connect,
// and the signal and abstract-socket scopes, each cut down to what the
// running kernel knows (Missing has already refused an ABI below 4).

// Filesystem rights, grouped as the rules use them.
const (
	llRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// llFileOnly are the rights that apply to a file (directory rights on
	// a file rule are EINVAL).
	llFileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_READ_FILE

	llRODirs  = llRead
	llRWDirs  = llRead | llWrite | unix.LANDLOCK_ACCESS_FS_REFER
	llROFiles = llRead & llFileOnly
	llRWFiles = (llRead | llWrite) & llFileOnly
)

// landlockRuleNetPort is LANDLOCK_RULE_NET_PORT (uapi/linux/landlock.h).
const landlockRuleNetPort = 2

// llHandled is what a kernel of ABI abi can handle of what odek asks for.
func llHandled(abi int) (fs, net, scoped uint64) {
	switch {
	case abi >= 5:
		fs = 1<<16 - 1 // … ioctl_dev
	case abi >= 3:
		fs = 1<<15 - 1 // … truncate
	case abi == 2:
		fs = 1<<14 - 1 // … refer
	case abi == 1:
		fs = 1<<13 - 1
	}
	if abi >= 4 {
		net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return fs, net, scoped
}

// llRulesetAttr is struct landlock_ruleset_attr up to scoped (ABI 6); the
// kernel accepts a shorter struct than its own and zero-fills the rest.
type llRulesetAttr struct {
	handledFS, handledNet, scoped uint64
}

// llPathBeneath is struct landlock_path_beneath_attr (packed in C: the
// kernel reads the first 12 bytes).
type llPathBeneath struct {
	allowed  uint64
	parentFD int32
	_        [4]byte
}

// llNetPort is struct landlock_net_port_attr.
type llNetPort struct {
	allowed, port uint64
}

// ABI returns the Landlock ABI version of the running kernel, 0 when
// Landlock is missing or disabled.
func ABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || int(v) < 0 {
		return 0
	}
	return int(v)
}

// restrictThread locks the calling goroutine to its thread for good and
// puts that thread under spec's Landlock rules (with no_new_privs, which
// Landlock requires and the exec keeps).
func restrictThread(spec Spec, abi int) error {
	runtime.LockOSThread() // never unlocked: the exec must come from this thread
	fsRights, netRights, scoped := llHandled(abi)
	attr := llRulesetAttr{handledFS: fsRights, handledNet: netRights, scoped: scoped}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %v", errno)
	}
	fd := int(r)
	defer unix.Close(fd)

	type pathRule struct {
		paths         []string
		access        uint64
		ignoreMissing bool
	}
	// A read-only grant whose path is gone is skipped: the spec lists
	// what existed when it was made (the entries of a directory split
	// around a denied path, say /tmp's), and any of them may be removed
	// before a job's command starts. Skipping grants less, never more;
	// failing would stop every command of the job (and, for a template
	// made at the worker's start, of every later job) because somebody
	// removed a file nobody asked for. The job's own root and temp dir
	// must exist.
	for _, pr := range []pathRule{
		{[]string{spec.Root, spec.TempDir}, llRWDirs, false},
		{spec.ReadOnly, llRODirs, true},
		{spec.ReadOnlyFiles, llROFiles, true},
		{spec.Devices, llRWFiles, true},
	} {
		access := pr.access & fsRights
		if access == 0 {
			continue
		}
		for _, p := range pr.paths {
			if err := llAddPath(fd, p, access); err != nil {
				if pr.ignoreMissing && errors.Is(err, unix.ENOENT) {
					continue
				}
				return fmt.Errorf("landlock rule for %q: %w", p, err)
			}
		}
	}
	if netRights != 0 {
		for _, p := range spec.ConnectPorts {
			if err := llAddPort(fd, p, unix.LANDLOCK_ACCESS_NET_CONNECT_TCP); err != nil {
				return fmt.Errorf("landlock rule for TCP connect to port %d: %w", p, err)
			}
		}
		for _, p := range spec.BindPorts {
			if err := llAddPort(fd, p, unix.LANDLOCK_ACCESS_NET_BIND_TCP); err != nil {
				return fmt.Errorf("landlock rule for TCP bind of port %d: %w", p, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %v", errno)
	}
	return nil
}

func llAddPath(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	attr := llPathBeneath{allowed: access, parentFD: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	runtime.KeepAlive(&attr)
	if errno != 0 {
		return errno
	}
	return nil
}

func llAddPort(rulesetFD int, port uint16, access uint64) error {
	attr := llNetPort{allowed: access, port: uint64(port)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), landlockRuleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	runtime.KeepAlive(&attr)
	if errno != 0 {
		return errno
	}
	return nil
}
