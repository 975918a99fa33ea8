//go:build linux

package sandbox

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// runBPF interprets prog (the classic-BPF subset the filter uses) over
// struct seccomp_data and returns the action. It refuses what it does
// not know, so a new instruction cannot pass untested.
func runBPF(t *testing.T, prog []unix.SockFilter, data []byte) uint32 {
	t.Helper()
	var a uint32
	var mem [16]uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if int(in.K)+4 > len(data) {
				t.Fatalf("pc %d: load beyond seccomp_data at %d", pc, in.K)
			}
			a = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_LD | unix.BPF_MEM:
			a = mem[in.K]
		case unix.BPF_ST:
			mem[in.K] = a
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var cond bool
			switch in.Code & 0xf0 {
			case unix.BPF_JEQ:
				cond = a == in.K
			case unix.BPF_JGE:
				cond = a >= in.K
			case unix.BPF_JSET:
				cond = a&in.K != 0
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("pc %d: instruction %#x not interpreted", pc, in.Code)
		}
	}
	t.Fatal("the program fell off its end")
	return 0
}

// seccompData is struct seccomp_data for a native call.
func seccompData(arch uint32, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], nr)
	binary.LittleEndian.PutUint32(b[4:], arch)
	for i, v := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], v)
	}
	return b
}

func TestSeccompProgram(t *testing.T) {
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	deny := func(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	const (
		nb   = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
		high = 0xffffffff00000000 // the kernel reads int arguments' low 32 bits
	)
	type call struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
	}
	n := func(name string, nr uint32, args ...uint64) call { return call{name, auditArch, nr, args} }
	tests := []struct {
		c             call
		want, wantNet uint32 // wantNet: with a connect and a bind port granted (0 ⇒ same as want)
	}{
		{c: call{"foreign ABI", unix.AUDIT_ARCH_I386, 1, nil}, want: deny(unix.ENOSYS)},
		{c: n("x32 number", x32Bit|unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), want: deny(unix.ENOSYS)},
		{c: n("io_uring_setup", unix.SYS_IO_URING_SETUP), want: deny(unix.ENOSYS)},
		{c: n("read", unix.SYS_READ, 0), want: allow},
		{c: n("connect", unix.SYS_CONNECT, 3), want: allow},
		// socket(2): the allowlist.
		{c: n("tcp", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), want: allow},
		{c: n("tcp6 nonblock cloexec", unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM|nb, unix.IPPROTO_TCP), want: allow},
		{c: n("udp", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP), want: deny(unix.EACCES), wantNet: allow},
		{c: n("udp6", unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0), want: deny(unix.EACCES), wantNet: allow},
		{c: n("ping", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), want: deny(unix.EACCES), wantNet: allow},
		{c: n("ping6", unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6), want: deny(unix.EACCES), wantNet: allow},
		{c: n("tcp, high bits ignored", unix.SYS_SOCKET, high|unix.AF_INET, high|unix.SOCK_STREAM, high), want: allow},
		{c: n("icmpv6 on inet", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6), want: deny(unix.EACCES), wantNet: deny(unix.EPROTONOSUPPORT)},
		{c: n("icmp on inet6", unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), want: deny(unix.EACCES), wantNet: deny(unix.EPROTONOSUPPORT)},
		{c: n("mptcp", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP), want: deny(unix.EPROTONOSUPPORT)},
		{c: n("sctp stream", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP), want: deny(unix.EPROTONOSUPPORT)},
		{c: n("udp as stream", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_UDP), want: deny(unix.EPROTONOSUPPORT)},
		{c: n("tcp as dgram", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_TCP), want: deny(unix.EACCES), wantNet: deny(unix.EPROTONOSUPPORT)},
		{c: n("raw", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW), want: deny(unix.ESOCKTNOSUPPORT)},
		{c: n("raw icmp", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), want: deny(unix.ESOCKTNOSUPPORT)},
		{c: n("seqpacket sctp", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), want: deny(unix.ESOCKTNOSUPPORT)},
		{c: n("unknown type bits", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|0x100, 0), want: deny(unix.ESOCKTNOSUPPORT)},
		{c: n("unix", unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0), want: deny(unix.EAFNOSUPPORT)},
		{c: n("unix dgram", unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM|nb, 0), want: deny(unix.EAFNOSUPPORT)},
		{c: n("netlink", unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), want: deny(unix.EAFNOSUPPORT)},
		{c: n("packet", unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0x0300), want: deny(unix.EAFNOSUPPORT)},
		{c: n("vsock", unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0), want: deny(unix.EAFNOSUPPORT)},
		{c: n("alg", unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET, 0), want: deny(unix.EAFNOSUPPORT)},
		{c: n("bluetooth", unix.SYS_SOCKET, unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0), want: deny(unix.EAFNOSUPPORT)},
		// socketpair(2): Unix stream and seqpacket pairs only.
		{c: n("socketpair stream", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM|nb, 0), want: allow},
		{c: n("socketpair seqpacket", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_SEQPACKET, 0), want: allow},
		{c: n("socketpair dgram", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM, 0), want: deny(unix.ESOCKTNOSUPPORT)},
		{c: n("socketpair inet", unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM, 0), want: deny(unix.EAFNOSUPPORT)},
		// TCP Fast Open and repair.
		{c: n("sendto", unix.SYS_SENDTO, 3, 0, 5, unix.MSG_NOSIGNAL, 0, 0), want: allow},
		{c: n("sendto fastopen", unix.SYS_SENDTO, 3, 0, 5, msgFastOpen, 0, 0), want: deny(unix.EOPNOTSUPP)},
		{c: n("sendto fastopen among flags", unix.SYS_SENDTO, 3, 0, 5, msgFastOpen|unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT, 0, 0), want: deny(unix.EOPNOTSUPP)},
		{c: n("sendmsg", unix.SYS_SENDMSG, 3, 0, unix.MSG_NOSIGNAL), want: allow},
		{c: n("sendmsg fastopen", unix.SYS_SENDMSG, 3, 0, msgFastOpen), want: deny(unix.EOPNOTSUPP)},
		{c: n("sendmmsg", unix.SYS_SENDMMSG, 3, 0, 2, 0), want: allow},
		{c: n("sendmmsg fastopen", unix.SYS_SENDMMSG, 3, 0, 2, msgFastOpen), want: deny(unix.EOPNOTSUPP)},
		{c: n("setsockopt nodelay", unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, unix.TCP_NODELAY), want: allow},
		{c: n("setsockopt reuseaddr", unix.SYS_SETSOCKOPT, 3, unix.SOL_SOCKET, unix.SO_REUSEADDR), want: allow},
		{c: n("setsockopt 30 at SOL_SOCKET", unix.SYS_SETSOCKOPT, 3, unix.SOL_SOCKET, tcpFastOpenConnect), want: allow},
		{c: n("setsockopt fastopen connect", unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, tcpFastOpenConnect), want: deny(unix.EOPNOTSUPP)},
		{c: n("setsockopt repair", unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, tcpRepair), want: deny(unix.EPERM)},
		// listen(2): only with a bind port.
		{c: n("listen", unix.SYS_LISTEN, 3, 128), want: deny(unix.EACCES), wantNet: allow},
		// Terminal input injection.
		{c: n("ioctl TIOCSTI", unix.SYS_IOCTL, 0, unix.TIOCSTI), want: deny(unix.EPERM)},
		{c: n("ioctl TIOCLINUX", unix.SYS_IOCTL, 0, unix.TIOCLINUX), want: deny(unix.EPERM)},
		{c: n("ioctl TCGETS", unix.SYS_IOCTL, 0, unix.TCGETS), want: allow},
		{c: n("setsid", unix.SYS_SETSID), want: allow},
		{c: n("setpgid", unix.SYS_SETPGID, 0, 0), want: allow},
	}
	plain, err := buildSeccompProgram(filterOpts{})
	if err != nil {
		t.Fatal(err)
	}
	network, err := buildSeccompProgram(filterOpts{listen: true, datagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	locked, err := buildSeccompProgram(filterOpts{lockSession: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		data := seccompData(tt.c.arch, tt.c.nr, tt.c.args...)
		if got := runBPF(t, plain, data); got != tt.want {
			t.Errorf("%s: action %#x, want %#x", tt.c.name, got, tt.want)
		}
		wantNet := tt.wantNet
		if wantNet == 0 {
			wantNet = tt.want
		}
		if got := runBPF(t, network, data); got != wantNet {
			t.Errorf("%s with ports granted: action %#x, want %#x", tt.c.name, got, wantNet)
		}
	}
	for _, nr := range []uint32{unix.SYS_SETSID, unix.SYS_SETPGID} {
		if got := runBPF(t, locked, seccompData(auditArch, nr, 0, 0)); got != deny(unix.EPERM) {
			t.Errorf("lock session: syscall %d: action %#x", nr, got)
		}
	}
	if got := runBPF(t, locked, seccompData(auditArch, unix.SYS_GETPID)); got != allow {
		t.Errorf("lock session: getpid: action %#x", got)
	}
}

// Every syscall number a native program may use reaches a return, and
// the only ones refused are those the filter names.
func TestSeccompProgramAllowsTheRest(t *testing.T) {
	prog, err := buildSeccompProgram(filterOpts{})
	if err != nil {
		t.Fatal(err)
	}
	filtered := map[uint32]bool{unix.SYS_IO_URING_SETUP: true, unix.SYS_SOCKET: true, unix.SYS_SOCKETPAIR: true,
		unix.SYS_SENDTO: true, unix.SYS_SENDMSG: true, unix.SYS_SENDMMSG: true, unix.SYS_SETSOCKOPT: true,
		unix.SYS_LISTEN: true, unix.SYS_IOCTL: true, unix.SYS_PTRACE: true}
	for _, nr := range processAndIPCCalls {
		filtered[nr] = true
	}
	for nr := uint32(0); nr < 1024; nr++ {
		if filtered[nr] {
			continue
		}
		if got := runBPF(t, prog, seccompData(auditArch, nr)); got != unix.SECCOMP_RET_ALLOW {
			t.Errorf("syscall %d: action %#x, want allow", nr, got)
		}
	}
}

func TestBPFAsmErrors(t *testing.T) {
	var a bpfAsm
	a.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 1, "nowhere", "")
	if _, err := a.assemble(); err == nil {
		t.Error("a jump to a missing label assembled")
	}
	var b bpfAsm
	b.label("back")
	b.stmt(unix.BPF_RET|unix.BPF_K, 0)
	b.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 1, "back", "")
	if _, err := b.assemble(); err == nil {
		t.Error("a backward jump assembled")
	}
	var c bpfAsm
	c.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 1, "far", "")
	for range 300 {
		c.stmt(unix.BPF_RET|unix.BPF_K, 0)
	}
	c.label("far")
	if _, err := c.assemble(); err == nil {
		t.Errorf("a jump of %d assembled", 300)
	}
}

// The rights the sandbox asks the kernel to handle are go-landlock's
// presets, ABI by ABI (odek applied V7.BestEffort() through go-landlock
// before it restricted the helper's thread itself), and from ABI 6 they
// scope signals and abstract Unix sockets: the job's end relies on the
// first, and the second keeps a job from a Unix socket of odek or another
// job.
func TestLandlockHandledRightsFollowGoLandlock(t *testing.T) {
	presets := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}
	for i, p := range presets {
		abi := i + 1
		fs, net, scoped := llHandled(abi)
		if fs != uint64(p.HandledAccessFS) || net != uint64(p.HandledAccessNet) || scoped != uint64(p.Scoped) {
			t.Errorf("ABI %d: handled fs %#x net %#x scoped %#x, go-landlock V%d has %#x %#x %#x",
				abi, fs, net, scoped, abi, uint64(p.HandledAccessFS), uint64(p.HandledAccessNet), uint64(p.Scoped))
		}
	}
	want := uint64(llsyscall.ScopeSignal | llsyscall.ScopeAbstractUnixSocket)
	if _, _, got := llHandled(7); got&want != want {
		t.Errorf("ABI 7 scopes %#x, want signals and abstract Unix sockets", got)
	}
	if fs, _, _ := llHandled(8); fs&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0 {
		t.Errorf("a newer kernel handles resolve_unix, which no rule grants: a job could not reach the name service socket")
	}
	for name, r := range map[string]uint64{"RODirs": llRODirs, "RWDirs": llRWDirs, "ROFiles": llROFiles, "RWFiles": llRWFiles} {
		if r&^uint64(landlock.V7.HandledAccessFS) != 0 {
			t.Errorf("%s grants %#x beyond what V7 handles", name, r)
		}
	}
	if llRWDirs&unix.LANDLOCK_ACCESS_FS_REFER == 0 || llRWFiles&unix.LANDLOCK_ACCESS_FS_READ_DIR != 0 || llROFiles&unix.LANDLOCK_ACCESS_FS_WRITE_FILE != 0 {
		t.Errorf("rule rights: RWDirs %#x, RWFiles %#x, ROFiles %#x", llRWDirs, llRWFiles, llROFiles)
	}
}

// processAndIPCCalls are refused outright: other processes' memory and
// descriptors, and System V IPC.
var processAndIPCCalls = []uint32{unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD, unix.SYS_KCMP,
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT, unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV,
	unix.SYS_MSGCTL, unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL}

// A job can neither read, write, trace nor take a descriptor from any
// process, nor use System V IPC; PTRACE_TRACEME alone stays.
func TestSeccompProgramRefusesOtherProcessesAndIPC(t *testing.T) {
	prog, err := buildSeccompProgram(filterOpts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, nr := range processAndIPCCalls {
		if got := runBPF(t, prog, seccompData(auditArch, nr)); got != unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
			t.Errorf("syscall %d: action %#x, want EPERM", nr, got)
		}
	}
	for _, req := range []uint64{unix.PTRACE_ATTACH, unix.PTRACE_SEIZE, unix.PTRACE_PEEKDATA, unix.PTRACE_POKEDATA, unix.PTRACE_INTERRUPT} {
		if got := runBPF(t, prog, seccompData(auditArch, unix.SYS_PTRACE, req)); got != unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
			t.Errorf("ptrace request %d: action %#x, want EPERM", req, got)
		}
	}
	if got := runBPF(t, prog, seccompData(auditArch, unix.SYS_PTRACE, unix.PTRACE_TRACEME)); got != unix.SECCOMP_RET_ALLOW {
		t.Errorf("PTRACE_TRACEME: action %#x, want allow", got)
	}
}
