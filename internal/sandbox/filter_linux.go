//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter closes what Landlock does not mediate. It is one
// classic-BPF program, the same for a Jail's thread and for the helper,
// built from a filterOpts by buildSeccompProgram:
//
//   - foreign syscall ABIs (32-bit compat, x32), where the same numbers
//     mean other calls: ENOSYS;
//   - io_uring_setup, whose operations bypass seccomp: ENOSYS;
//   - socket(2) is an allowlist: AF_INET and AF_INET6 with SOCK_STREAM
//     (protocol 0 or TCP) or, only when the spec grants a TCP connect
//     port (a job with network), SOCK_DGRAM (0, UDP, or the ICMP of the
//     family: ping sockets; without a grant: EACCES, since Landlock
//     mediates no datagram); SOCK_NONBLOCK and SOCK_CLOEXEC may be set.
//     Any other family (AF_UNIX, whose pathname sockets Landlock mediates
//     only from ABI 9; AF_NETLINK, AF_PACKET, AF_VSOCK, …) is
//     EAFNOSUPPORT, any other type (SOCK_RAW, SOCK_SEQPACKET, …)
//     ESOCKTNOSUPPORT, any other protocol (MPTCP, SCTP, …)
//     EPROTONOSUPPORT;
//   - socketpair(2) only as AF_UNIX SOCK_STREAM or SOCK_SEQPACKET: a
//     datagram Unix socket could be sent to a pathname with sendto;
//   - TCP Fast Open, which opens a connection without connect(2) (the only
//     call Landlock's TCP rule sees): MSG_FASTOPEN in the flags of sendto,
//     sendmsg and sendmmsg, and setsockopt(IPPROTO_TCP,
//     TCP_FASTOPEN_CONNECT): EOPNOTSUPP, so a client falls back to
//     connect(2);
//   - setsockopt(IPPROTO_TCP, TCP_REPAIR): EPERM;
//   - listen(2), unless the spec grants a bind port: EACCES. Landlock's
//     bind rule does not see the port listen(2) binds on its own;
//   - ioctl TIOCSTI and TIOCLINUX, which push input into a terminal: EPERM;
//   - with lockSession (the fallback without Landlock's signal scoping,
//     see Jail): setsid(2) and setpgid(2): EPERM, so a job's processes stay
//     in the process group the Jail kills at its end; with ownGroup (a
//     job's supervisor, which runs only where the job has a cgroup),
//     setpgid(0, 0) alone is allowed;
//
// Every other syscall is allowed.
type filterOpts struct {
	listen      bool // the spec grants a bind port: listen(2) allowed
	datagrams   bool // the spec grants a connect port: UDP and ping sockets allowed
	lockSession bool // refuse setsid and setpgid
	// ownGroup (with lockSession): setpgid(0, 0) is allowed, which makes
	// the caller the leader of a new process group. A job's supervisor
	// (supervisor_linux.go) needs it to give each call a group of its own
	// after fork; it runs only where the job has a cgroup, which ends
	// every process of the job whatever group it is in.
	ownGroup bool
}

// Numbers the filter tests that x/sys/unix does not name on every
// architecture, and the offsets of struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	// ipprotoMPTCP is IPPROTO_MPTCP (Landlock's TCP rules do not cover
	// Multipath TCP; the socket allowlist refuses it with the rest).
	ipprotoMPTCP = 262
	// tcpFastOpenConnect is TCP_FASTOPEN_CONNECT (linux/tcp.h).
	tcpFastOpenConnect = 30
	// tcpRepair is TCP_REPAIR (linux/tcp.h).
	tcpRepair = 19
	// msgFastOpen is MSG_FASTOPEN.
	msgFastOpen = 0x20000000
)

// offArg is the offset of the low 32 bits of args[i] (little-endian;
// the calls tested here take int arguments, which the kernel truncates
// to those bits too).
func offArg(i int) uint32 { return uint32(16 + 8*i) }

// installSeccomp installs the filter of opts on the calling thread, or
// with flags SECCOMP_FILTER_FLAG_TSYNC on every thread of the process.
// no_new_privs must be set.
func installSeccomp(opts filterOpts, flags uintptr) error {
	prog, err := buildSeccompProgram(opts)
	if err != nil {
		return err
	}
	return loadSeccomp(prog, flags)
}

func loadSeccomp(prog []unix.SockFilter, flags uintptr) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return e
	}
	return nil
}

// bpfAsm assembles a classic-BPF program with named forward jump targets.
type bpfAsm struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
}

type bpfJump struct {
	at     int
	jt, jf string // "" ⇒ the next instruction
}

func (a *bpfAsm) stmt(code uint16, k uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) jump(code uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, bpfJump{at: len(a.ins), jt: jt, jf: jf})
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	off := func(from int, to string) (uint8, error) {
		if to == "" {
			return 0, nil
		}
		at, ok := a.labels[to]
		if !ok {
			return 0, fmt.Errorf("seccomp program: no label %q", to)
		}
		d := at - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp program: jump to %q out of range (%d)", to, d)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		var err error
		if a.ins[j.at].Jt, err = off(j.at, j.jt); err != nil {
			return nil, err
		}
		if a.ins[j.at].Jf, err = off(j.at, j.jf); err != nil {
			return nil, err
		}
	}
	if len(a.ins) > 4096 {
		return nil, errors.New("seccomp program: too long")
	}
	return a.ins, nil
}

func buildSeccompProgram(opts filterOpts) ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, errors.New("no filter for this architecture (amd64 and arm64 only)")
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ldMem = unix.BPF_LD | unix.BPF_MEM
		st    = unix.BPF_ST
		and   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
	)
	errno := func(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	var a bpfAsm
	a.stmt(ld, offArch)
	a.jump(jeq, auditArch, "native", "")
	a.stmt(ret, errno(unix.ENOSYS)) // a foreign ABI
	a.label("native")
	a.stmt(ld, offNr)
	a.jump(jge, x32Bit, "", "numbered")
	a.stmt(ret, errno(unix.ENOSYS)) // x32 numbers on amd64
	a.label("numbered")

	// Each block below starts with "nr == N, else the next block": A
	// holds the syscall number until a block is entered, and every block
	// ends in a return.
	block := func(nr uint32, name string) {
		a.jump(jeq, nr, "", "not-"+name)
	}
	end := func(name string) { a.label("not-" + name) }

	block(unix.SYS_IO_URING_SETUP, "io_uring")
	a.stmt(ret, errno(unix.ENOSYS))
	end("io_uring")

	block(unix.SYS_SOCKET, "socket")
	a.stmt(ld, offArg(0))
	a.jump(jeq, unix.AF_INET, "family-ok", "")
	a.jump(jeq, unix.AF_INET6, "family-ok", "")
	a.stmt(ret, errno(unix.EAFNOSUPPORT))
	a.label("family-ok")
	a.stmt(st, 0) // M[0] = family
	a.stmt(ld, offArg(1))
	a.stmt(and, ^uint32(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC))
	a.jump(jeq, unix.SOCK_STREAM, "stream", "")
	a.jump(jeq, unix.SOCK_DGRAM, "dgram", "")
	a.stmt(ret, errno(unix.ESOCKTNOSUPPORT))
	a.label("stream")
	a.stmt(ld, offArg(2))
	a.jump(jeq, 0, "socket-ok", "")
	a.jump(jeq, unix.IPPROTO_TCP, "socket-ok", "")
	a.stmt(ret, errno(unix.EPROTONOSUPPORT))
	a.label("dgram")
	if !opts.datagrams {
		// No network granted: UDP and ping sockets reach what Landlock
		// cannot see (any host and port, DNS included).
		a.stmt(ret, errno(unix.EACCES))
	}
	a.stmt(ld, offArg(2))
	a.jump(jeq, 0, "socket-ok", "")
	a.jump(jeq, unix.IPPROTO_UDP, "socket-ok", "")
	a.jump(jeq, unix.IPPROTO_ICMP, "icmp", "")
	a.jump(jeq, unix.IPPROTO_ICMPV6, "icmpv6", "")
	a.stmt(ret, errno(unix.EPROTONOSUPPORT))
	a.label("icmp")
	a.stmt(ldMem, 0)
	a.jump(jeq, unix.AF_INET, "socket-ok", "")
	a.stmt(ret, errno(unix.EPROTONOSUPPORT))
	a.label("icmpv6")
	a.stmt(ldMem, 0)
	a.jump(jeq, unix.AF_INET6, "socket-ok", "")
	a.stmt(ret, errno(unix.EPROTONOSUPPORT))
	a.label("socket-ok")
	a.stmt(ret, allow)
	end("socket")

	block(unix.SYS_SOCKETPAIR, "socketpair")
	a.stmt(ld, offArg(0))
	a.jump(jeq, unix.AF_UNIX, "", "pair-family")
	a.stmt(ld, offArg(1))
	a.stmt(and, ^uint32(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC))
	a.jump(jeq, unix.SOCK_STREAM, "pair-ok", "")
	a.jump(jeq, unix.SOCK_SEQPACKET, "pair-ok", "")
	a.stmt(ret, errno(unix.ESOCKTNOSUPPORT))
	a.label("pair-family")
	a.stmt(ret, errno(unix.EAFNOSUPPORT))
	a.label("pair-ok")
	a.stmt(ret, allow)
	end("socketpair")

	for _, s := range []struct {
		nr    uint32
		name  string
		flags int
	}{{unix.SYS_SENDTO, "sendto", 3}, {unix.SYS_SENDMSG, "sendmsg", 2}, {unix.SYS_SENDMMSG, "sendmmsg", 3}} {
		block(s.nr, s.name)
		a.stmt(ld, offArg(s.flags))
		a.jump(jset, msgFastOpen, "", s.name+"-ok")
		a.stmt(ret, errno(unix.EOPNOTSUPP))
		a.label(s.name + "-ok")
		a.stmt(ret, allow)
		end(s.name)
	}

	block(unix.SYS_SETSOCKOPT, "setsockopt")
	a.stmt(ld, offArg(1))
	a.jump(jeq, unix.IPPROTO_TCP, "", "sockopt-ok")
	a.stmt(ld, offArg(2))
	a.jump(jeq, tcpFastOpenConnect, "", "sockopt-repair")
	a.stmt(ret, errno(unix.EOPNOTSUPP))
	a.label("sockopt-repair")
	a.jump(jeq, tcpRepair, "", "sockopt-ok")
	a.stmt(ret, errno(unix.EPERM))
	a.label("sockopt-ok")
	a.stmt(ret, allow)
	end("setsockopt")

	if !opts.listen {
		block(unix.SYS_LISTEN, "listen")
		a.stmt(ret, errno(unix.EACCES))
		end("listen")
	}

	block(unix.SYS_IOCTL, "ioctl")
	a.stmt(ld, offArg(1))
	a.jump(jeq, unix.TIOCSTI, "ioctl-no", "")
	a.jump(jeq, unix.TIOCLINUX, "ioctl-no", "ioctl-ok")
	a.label("ioctl-no")
	a.stmt(ret, errno(unix.EPERM))
	a.label("ioctl-ok")
	a.stmt(ret, allow)
	end("ioctl")

	// Another process's memory and descriptors: a job may not read,
	// write, trace or copy a descriptor from any process, its own
	// included, whatever Landlock's ptrace rules would allow (review of
	// issue 21: a confined thread of the worker in the job's domain was
	// readable and writable through these, and its Redis connections
	// could be taken with pidfd_getfd). PTRACE_TRACEME stays: it gives
	// the parent power over the caller, never the reverse.
	block(unix.SYS_PTRACE, "ptrace")
	a.stmt(ld, offArg(0))
	a.jump(jeq, unix.PTRACE_TRACEME, "ptrace-ok", "")
	a.stmt(ret, errno(unix.EPERM))
	a.label("ptrace-ok")
	a.stmt(ret, allow)
	end("ptrace")
	for _, nr := range []uint32{unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD, unix.SYS_KCMP,
		// System V IPC: segments and queues outlive the job, are shared
		// by every job of the machine's IPC namespace, and shared memory
		// is not counted against RLIMIT_AS (the review held 2 GiB after
		// its job ended).
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
		unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
		unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL} {
		name := fmt.Sprint("refused-", nr)
		block(nr, name)
		a.stmt(ret, errno(unix.EPERM))
		end(name)
	}

	if opts.lockSession {
		block(unix.SYS_SETSID, "setsid")
		a.stmt(ret, errno(unix.EPERM))
		end("setsid")
		block(unix.SYS_SETPGID, "setpgid")
		if opts.ownGroup {
			a.stmt(ld, offArg(0))
			a.jump(jeq, 0, "", "setpgid-no")
			a.stmt(ld, offArg(1))
			a.jump(jeq, 0, "", "setpgid-no")
			a.stmt(ret, allow)
			a.label("setpgid-no")
		}
		a.stmt(ret, errno(unix.EPERM))
		end("setpgid")
	}
	a.stmt(ret, allow)
	return a.assemble()
}
