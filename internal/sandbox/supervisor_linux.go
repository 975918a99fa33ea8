//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The supervisor side of a job's supervisor (supervise_linux.go has the
// Jail's side, superproto.go the records between them).
//
// `odek-sandbox __odek-sandbox-supervise <spec JSON>`, with the Jail's
// end of a SOCK_SEQPACKET socketpair as fd 3, confines itself once as the
// helper confines itself for every command — a session of its own, the
// job's cgroups joined, the Landlock ruleset and the seccomp filter
// (which here lets setpgid(0, 0) through, see filterOpts.ownGroup), the
// resource limits, every capability dropped, and not dumpable — then
// answers recReady and serves calls: for each recStart it does what the
// helper does per command, from the one confined thread: chdir to the
// call's directory, look the command up on the call's PATH (a message on
// the call's stderr and status 127 when it is not there), and fork/exec
// it with the call's environment and the three descriptors that came
// with the record, as the leader of a process group of its own. The
// command inherits the confinement; a failed exec is reported as the
// helper reports it (status 126). It reaps the call and answers recExit
// with the wait status. recKill kills the call's process group, only
// while the call's leader is not reaped yet (its pid, and so the group's
// number, cannot have been reused). It exits when the Jail's end of the
// socket closes, or on a record it cannot read.

// SuperviseArg, as the first argument, makes an odek binary (or
// odek-sandbox) run as a job's supervisor.
const SuperviseArg = "__odek-sandbox-supervise"

// supervisorFD is the descriptor of the supervisor's socket.
const supervisorFD = 3

func runSupervisor(args []string, stderr io.Writer) int {
	// Locked before anything: the runtime starts its template thread at
	// a goroutine's first lock, and here that is long before the
	// capabilities of every thread are dropped (confineSupervisor), which
	// otherwise waits, spinning in sched_yield, for that new thread to
	// start (measured: 0.1–2.9 ms of CPU, against 0.05–0.3 ms). Undone
	// once confined: the lock that stays is restrictThread's.
	runtime.LockOSThread()
	if len(args) != 1 {
		fmt.Fprintf(stderr, "odek sandbox: usage: %s <spec JSON> (with the socket as fd %d)\n", SuperviseArg, supervisorFD)
		return ExitUsage
	}
	var spec Spec
	dec := json.NewDecoder(strings.NewReader(args[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		fmt.Fprintf(stderr, "odek sandbox: bad spec: %v\n", err)
		return ExitUsage
	}
	var st unix.Stat_t
	if err := unix.Fstat(supervisorFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		fmt.Fprintf(stderr, "odek sandbox: fd %d is not the supervisor's socket\n", supervisorFD)
		return ExitUsage
	}
	// Never inherited by a command: the socket is the Jail's, and a
	// command holding it could ask for calls of its own.
	unix.CloseOnExec(supervisorFD)
	if err := confineSupervisor(spec); err != nil {
		fmt.Fprintf(stderr, "odek sandbox: not serving commands, the sandbox could not be applied: %v\n", err)
		return ExitNotConfined
	}
	runtime.UnlockOSThread() // still locked once, by restrictThread
	// The Jail started this process with a long timer slack for the
	// runtime's sysmon (supervisorSlack): this thread forks the
	// commands, which get the worker's own back.
	if ns, err := strconv.ParseInt(os.Getenv(slackEnv), 10, 64); err == nil && ns > 0 {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0)
	}
	// One P: see supervisor. The Jail sets GOMAXPROCS=1 in the
	// environment, which also keeps the runtime from revising it.
	if runtime.GOMAXPROCS(0) != 1 {
		runtime.GOMAXPROCS(1)
	}
	s, err := newSupervisor(supervisorFD, spec.Root)
	if err != nil {
		fmt.Fprintf(stderr, "odek sandbox: not serving commands: %v\n", err)
		return ExitNotConfined
	}
	// From here stderr is the Jail's pipe no more: the Jail stops reading
	// it at recReady.
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Dup3(null, 1, 0)
		_ = unix.Dup3(null, 2, 0)
		unix.Close(null)
	}
	if err := s.reply(record{typ: recReady, n: uint32(os.Getpid())}); err != nil {
		return ExitNotConfined
	}
	if err := s.serve(); err != nil {
		// Nobody reads stderr now; the Jail sees the socket close.
		return 1
	}
	return 0
}

// confineSupervisor applies spec to the supervisor: what runHelper does
// before it execs, once. The calling goroutine stays locked to the
// confined thread, which forks every command.
func confineSupervisor(spec Spec) error {
	if err := newSession(); err != nil {
		return fmt.Errorf("setsid: %v", err)
	}
	for _, dir := range append([]string{spec.Cgroup}, spec.CgroupsV1...) {
		if dir == "" {
			return errors.New("the spec names no cgroup (a supervisor runs only in a job's cgroup)")
		}
		if err := joinCgroup(dir); err != nil {
			return fmt.Errorf("join the job's cgroup %s: %v", dir, err)
		}
	}
	opts := specFilter(spec)
	opts.ownGroup = true
	if err := enforceWith(spec, opts); err != nil {
		return err
	}
	if err := setLimits(spec); err != nil {
		return err
	}
	// Every capability, of every thread where the runtime can do that
	// (no cgo), and of the confined thread in any case: it forks the
	// commands, which inherit its credentials, and no_new_privs keeps
	// exec from granting any back (helperExec).
	//
	// A process that has none (started by a worker that is not root, as
	// in the image, or by a root one with SECBIT_NOROOT, see
	// startSupervisorProc) skips the all-threads call, which stops the
	// world and spins until every thread ran it (0.3–0.5 ms of CPU a job
	// on a loaded machine): every thread of a new process has the
	// capabilities of the exec, and nothing here changes a thread's, so
	// this thread's empty sets are every one's.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var cur, data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &cur[0]); err == nil && cur == data {
		return notDumpable()
	}
	hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("drop capabilities: %v", err)
		}
	}
	return notDumpable()
}

func notDumpable() error {
	// Not dumpable: no core file, and /proc/<pid>/{mem,environ,fd} of
	// the supervisor are root's only (a job has no /proc anyway).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %v", err)
	}
	return nil
}

// supervisor is the serving state, owned by the one goroutine of the
// supervisor, locked to the confined thread, which does all the work of
// a call with system calls of its own: it waits in epoll_wait(2) on the
// Jail's socket and on a pidfd per running call, reads a record with
// recvmsg(2), forks the command (a vfork-style clone that returns the
// child's pidfd), reaps it with waitid(P_PIDFD) once its pidfd is
// readable, and writes the status with sendto(2). Nothing is handed to
// another goroutine or thread, and neither the runtime's poller nor
// os/signal is used (SIGCHLD is left at its default: nobody listens).
//
// Why: the earlier loop (a reader goroutine on the poller handing each
// record over a channel to this goroutine, SIGCHLD through os/signal,
// the reply back through the poller) cost ~0.30 ms of the supervisor's
// CPU per call in ~20 context switches across 9 threads, against
// ~0.10 ms for a loop that forks and waits on one thread
// (docs/BENCHMARKS.md, issue 21 round 5).
//
// The runtime runs it on one P (GOMAXPROCS=1, set by the Jail and here):
// blocked in epoll_wait, the goroutine is in a system call, and with no
// other P idle sysmon takes its P back at its next tick and, the whole
// runtime idle, sleeps until the call returns. With two Ps (as an
// earlier loop blocked in poll(2) had) sysmon waits 10 ms before it
// takes the P, and after every call polled for those 10 ms: ~0.8 ms of
// CPU per call when calls came apart.
type supervisor struct {
	sock  int // the Jail's socket: blocking, read with MSG_DONTWAIT
	tid   int // the confined thread
	ep    int // epoll over sock and every running call's pidfd
	root  string
	calls map[uint64]*supCall
	byFD  map[int32]uint64 // a running call's pidfd → its id

	asm     callAssembler
	pending []int // the descriptors of the call being gathered

	// Buffers of the loop, made once.
	buf []byte
	oob []byte
	evs [8]unix.EpollEvent
	iov unix.Iovec
	msg unix.Msghdr
	out [recHeader]byte
}

// supCall is one running call, not yet reaped: while it is not, its pid
// and so its process group's number cannot be reused.
type supCall struct {
	pid   int
	pidfd int
}

func newSupervisor(sock int, root string) (*supervisor, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %v", err)
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, sock, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(sock)}); err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("epoll_ctl: %v", err)
	}
	// SIGCHLD at its default disposition (ignored, and so never
	// delivered; not SIG_IGN, which would reap the commands before their
	// status is read): the runtime's handler would interrupt epoll_wait
	// at every command's end, for nothing, since the pidfd says it.
	var act [4]uint64 // struct sigaction: SIG_DFL, no flags, no mask
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		unix.Close(ep)
		return nil, fmt.Errorf("rt_sigaction(SIGCHLD): %v", e)
	}
	return &supervisor{
		sock: sock, ep: ep, root: root, tid: unix.Gettid(),
		calls: map[uint64]*supCall{}, byFD: map[int32]uint64{},
		buf: make([]byte, maxRecord+1), oob: make([]byte, unix.CmsgSpace(4*(callFDs+1))),
	}, nil
}

// serve runs the loop until the Jail's end closes.
func (s *supervisor) serve() error {
	defer func() { closeFDs(s.pending) }()
	for {
		// A system call the scheduler knows of (not RawSyscall): the
		// runtime takes the P back while it blocks, and so its sysmon
		// can sleep, and a GC can run, while no call comes.
		n, err := unix.EpollWait(s.ep, s.evs[:], -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %v", err)
		}
		if err := s.yield(); err != nil {
			return err
		}
		for _, ev := range s.evs[:n] {
			if int(ev.Fd) == s.sock {
				done, err := s.readRecord()
				if err != nil || done {
					return err
				}
				continue
			}
			if err := s.reap(ev.Fd); err != nil {
				return err
			}
		}
	}
}

// yield passes through the scheduler, on this thread, so that sysmon
// sees the goroutine start anew each time it wakes. Otherwise it never
// does: the goroutine leaves the P only in system calls, and sysmon,
// which knows a goroutine's run by the P's scheduling count, takes it
// for one running since its last wait began (10 ms and more when calls
// come apart) and preempts it — and a preempted goroutine locked to its
// thread goes back to it through two other threads (measured: ~14
// context switches a call). Unlocked, with one P, Gosched comes back on
// this same thread (only this thread holds the P); that the thread is
// still the confined one is checked after, and anything else ends the
// supervisor (a command must never be forked from another thread).
func (s *supervisor) yield() error {
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
	if unix.Gettid() != s.tid {
		return errors.New("the serving goroutine left the confined thread")
	}
	return nil
}

// readRecord reads one record of the Jail and acts on it; done when the
// Jail closed its end.
func (s *supervisor) readRecord() (done bool, err error) {
	n, oobn, flags, err := s.recvmsg()
	if err == unix.EAGAIN || err == unix.EINTR {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the socket: %v", err)
	}
	got, err := rightsOf(s.oob[:oobn])
	switch {
	case err != nil:
		return false, err
	case n == 0 && oobn == 0:
		return true, nil // the Jail closed its end: the job is over
	case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		closeFDs(got)
		return false, errors.New("a record or its descriptors were truncated")
	}
	r, err := parseRecord(s.buf[:n])
	if err != nil {
		closeFDs(got)
		return false, err
	}
	switch r.typ {
	case recStart, recMore:
		if (r.typ == recStart && len(got) != callFDs) || (r.typ == recMore && len(got) != 0) {
			closeFDs(got)
			return false, fmt.Errorf("record %s of call %d with %d descriptors", recName(r.typ), r.id, len(got))
		}
		taken := r.typ == recStart && s.asm.id == 0
		if taken {
			s.pending = got
		}
		complete, err := s.asm.add(r)
		if err != nil {
			if !taken {
				closeFDs(got)
			}
			return false, err
		}
		if !complete {
			return false, nil
		}
		c, err := decodeCall(s.asm.body)
		if err != nil {
			return false, err
		}
		if err := s.start(s.asm.id, c, s.pending); err != nil {
			return false, err
		}
		closeFDs(s.pending)
		s.pending, s.asm = nil, callAssembler{}
	case recKill:
		closeFDs(got)
		if c := s.calls[r.id]; c != nil {
			// Not reaped (only this loop reaps), so its pid and group
			// number are still its own.
			_ = unix.Kill(-c.pid, unix.SIGKILL)
		}
	default:
		closeFDs(got)
		return false, fmt.Errorf("unexpected record %s", recName(r.typ))
	}
	return false, nil
}

// recvmsg reads one record and its descriptors (close-on-exec) into
// s.buf and s.oob, without blocking.
func (s *supervisor) recvmsg() (n, oobn, flags int, err error) {
	s.iov.Base = &s.buf[0]
	s.iov.SetLen(len(s.buf))
	s.msg = unix.Msghdr{Iov: &s.iov, Control: &s.oob[0]}
	s.msg.SetIovlen(1)
	s.msg.SetControllen(len(s.oob))
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(s.sock), uintptr(unsafe.Pointer(&s.msg)), unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if e != 0 {
		return 0, 0, 0, e
	}
	return int(r), int(s.msg.Controllen), int(s.msg.Flags), nil
}

// start runs c as call id with fds as its stdin, stdout and stderr (the
// caller closes them after). Its error is the supervisor's end: a call
// that cannot start is reported to the Jail as the helper would report
// it.
func (s *supervisor) start(id uint64, c call, fds []int) error {
	if s.calls[id] != nil {
		return fmt.Errorf("call %d is running already", id)
	}
	fail := func(code int, format string, args ...any) error {
		msg := fmt.Sprintf("odek sandbox: "+format+"\n", args...)
		_, _ = unix.Write(fds[2], []byte(msg))
		return s.reply(record{typ: recExit, id: id, n: uint32(code) << 8})
	}
	dir := c.dir
	if dir == "" {
		dir = s.root
	}
	// As the helper did it: the lookup in the call's directory, on the
	// call's PATH, from the confined thread (what the command could run
	// is what the lookup finds).
	if err := os.Chdir(dir); err != nil {
		return fail(ExitNotConfined, "chdir %s: %v", dir, err)
	}
	if p, ok := envValue(c.env, "PATH"); ok {
		os.Setenv("PATH", p)
	} else {
		os.Unsetenv("PATH")
	}
	path, err := exec.LookPath(c.argv[0])
	if err != nil {
		return fail(ExitNotFound, "%v", err)
	}
	pidfd := -1
	pid, err := syscall.ForkExec(path, c.argv, &syscall.ProcAttr{
		Env:   c.env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true, PidFD: &pidfd},
	})
	if err != nil {
		return fail(ExitNotConfined, "exec %s: %v", c.argv[0], err)
	}
	if pidfd < 0 {
		// clone(CLONE_PIDFD) is Linux 5.2, Landlock's RequiredABI 6.7:
		// not expected, but the child is not reaped yet, so its pid is
		// its own.
		if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
			_ = unix.Kill(-pid, unix.SIGKILL)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
			return fmt.Errorf("no pidfd for call %d: %v", id, err)
		}
	}
	if err := unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, pidfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pidfd)}); err != nil {
		_ = unix.Kill(-pid, unix.SIGKILL)
		_, _ = waitPidfd(pidfd, 0)
		unix.Close(pidfd)
		return fmt.Errorf("epoll_ctl for call %d: %v", id, err)
	}
	s.calls[id] = &supCall{pid: pid, pidfd: pidfd}
	s.byFD[int32(pidfd)] = id
	return nil
}

// reap reaps the call whose pidfd is readable (its command ended) and
// reports its status. A command that asked to be traced
// (PTRACE_TRACEME, which the filter allows) makes its pidfd readable
// only when it ends: its stops are not reported.
func (s *supervisor) reap(pidfd int32) error {
	id, ok := s.byFD[pidfd]
	if !ok {
		return fmt.Errorf("an event for descriptor %d, no call's", pidfd)
	}
	ws, err := waitPidfd(int(pidfd), unix.WNOHANG)
	if err == errNotEnded {
		return nil
	}
	if err != nil {
		return fmt.Errorf("waitid for call %d: %v", id, err)
	}
	unix.Close(int(pidfd)) // and so out of the epoll set
	delete(s.byFD, pidfd)
	delete(s.calls, id)
	return s.reply(record{typ: recExit, id: id, n: ws})
}

var errNotEnded = errors.New("not ended")

// chldInfo is siginfo_t as waitid(2) fills it for a child, on the 64-bit
// architectures the filter knows (amd64, arm64).
type chldInfo struct {
	signo, errno, code int32
	_                  int32
	pid                int32
	uid                uint32
	status             int32
	_                  [100]byte
}

// waitPidfd reaps the process of pidfd and returns its wait status as
// wait4(2) encodes it; errNotEnded when it has not ended (WNOHANG).
func waitPidfd(pidfd int, flags int) (uint32, error) {
	var info chldInfo
	for {
		_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_PIDFD, uintptr(pidfd), uintptr(unsafe.Pointer(&info)), uintptr(unix.WEXITED|flags), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		break
	}
	const (
		cldExited = 1
		cldKilled = 2
		cldDumped = 3
	)
	switch {
	case info.pid == 0:
		return 0, errNotEnded
	case info.code == cldExited:
		return uint32(info.status&0xff) << 8, nil
	case info.code == cldKilled:
		return uint32(info.status & 0x7f), nil
	case info.code == cldDumped:
		return uint32(info.status&0x7f) | 0x80, nil
	}
	return 0, fmt.Errorf("waitid: child code %d", info.code)
}

// reply sends r to the Jail (a blocking write: the Jail reads its
// records all the time).
func (s *supervisor) reply(r record) error {
	b := appendRecord(s.out[:0], r)
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.sock), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// rightsOf are the descriptors of the SCM_RIGHTS messages in oob; any
// other control message is an error (its descriptors closed).
func rightsOf(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control message: %v", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			closeFDs(fds)
			return nil, fmt.Errorf("control message of level %d type %d", m.Header.Level, m.Header.Type)
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("SCM_RIGHTS: %v", err)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// envValue is the value of name in env (the last one wins; the Jail
// sends an environment without duplicates, as exec.Cmd does).
func envValue(env []string, name string) (string, bool) {
	val, ok := "", false
	for _, kv := range env {
		if k, v, found := strings.Cut(kv, "="); found && k == name {
			val, ok = v, true
		}
	}
	return val, ok
}
