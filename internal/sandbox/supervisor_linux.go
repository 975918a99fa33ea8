//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
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
	// From here stderr is the Jail's pipe no more: the Jail stops reading
	// it at recReady.
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Dup3(null, 1, 0)
		_ = unix.Dup3(null, 2, 0)
		unix.Close(null)
	}
	f := os.NewFile(supervisorFD, "supervisor socket")
	c, err := net.FileConn(f) // a dup, close-on-exec, on the runtime's poller
	f.Close()
	conn, ok := c.(*net.UnixConn)
	if err != nil || !ok {
		return ExitUsage
	}
	s := &supervisor{conn: conn, root: spec.Root, calls: map[uint64]*supCall{}, byPid: map[int]uint64{}}
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
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("drop capabilities: %v", err)
		}
	}
	// Not dumpable: no core file, and /proc/<pid>/{mem,environ,fd} of
	// the supervisor are root's only (a job has no /proc anyway).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %v", err)
	}
	return nil
}

// supervisor is the serving state, owned by the confined goroutine
// (locked to the confined thread), which forks every command, reaps
// every call and kills their groups, in one loop: a kill is therefore
// ordered after any reaping, and reaches a group only while its leader
// is unreaped. It waits on channels, not in a system call: a reader
// goroutine parks on the runtime's poller for the socket, and SIGCHLD
// arrives through os/signal. (A loop blocked in poll(2) on the thread
// itself had the runtime take its P back after 10 ms, and every call
// then woke sysmon into ~10 ms of polling: ~0.8 ms of CPU per call when
// calls were apart, as they are in a job.)
type supervisor struct {
	conn  *net.UnixConn
	root  string // a call without a directory runs here
	calls map[uint64]*supCall
	byPid map[int]uint64
}

// supCall is one running call, not yet reaped.
type supCall struct {
	pid int
}

// inbound is one record read from the Jail, with its descriptors.
type inbound struct {
	data  []byte
	fds   []int
	flags int
	err   error // the socket's end or failure
}

// readRecords reads the Jail's records into out until the socket ends.
func (s *supervisor) readRecords(out chan<- inbound) {
	buf := make([]byte, maxRecord+1)
	oob := make([]byte, unix.CmsgSpace(4*(callFDs+1)))
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		fds, ferr := rightsOf(oob[:oobn])
		if err == nil && n == 0 && oobn == 0 {
			err = io.EOF
		}
		if err == nil {
			err = ferr
		}
		out <- inbound{data: append([]byte(nil), buf[:n]...), fds: fds, flags: flags, err: err}
		if err != nil {
			return
		}
	}
}

// serve runs the loop until the Jail's end closes.
func (s *supervisor) serve() error {
	recs := make(chan inbound)
	go s.readRecords(recs)
	exits := make(chan os.Signal, 1)
	signal.Notify(exits, unix.SIGCHLD)
	var asm callAssembler
	var pending []int // the descriptors of the call being gathered
	defer func() { closeFDs(pending) }()
	for {
		var in inbound
		select {
		case <-exits:
			s.reapAll()
			continue
		case in = <-recs:
		}
		got := in.fds
		switch {
		case errors.Is(in.err, io.EOF):
			closeFDs(got)
			return nil // the Jail closed its end: the job is over
		case in.err != nil:
			closeFDs(got)
			return in.err
		case in.flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			closeFDs(got)
			return errors.New("a record or its descriptors were truncated")
		}
		// Exits first: a kill read below for a call that has ended finds
		// it reaped and gone.
		s.reapAll()
		r, err := parseRecord(in.data)
		if err != nil {
			closeFDs(got)
			return err
		}
		switch r.typ {
		case recStart, recMore:
			if (r.typ == recStart && len(got) != callFDs) || (r.typ == recMore && len(got) != 0) {
				closeFDs(got)
				return fmt.Errorf("record %s of call %d with %d descriptors", recName(r.typ), r.id, len(got))
			}
			if r.typ == recStart {
				pending = got
			}
			done, err := asm.add(r)
			if err != nil {
				return err
			}
			if !done {
				continue
			}
			c, err := decodeCall(asm.body)
			if err != nil {
				return err
			}
			if err := s.start(asm.id, c, pending); err != nil {
				return err
			}
			closeFDs(pending)
			pending, asm = nil, callAssembler{}
		case recKill:
			closeFDs(got)
			if c := s.calls[r.id]; c != nil {
				// Not reaped (only this loop reaps), so its pid and
				// group number are still its own.
				_ = unix.Kill(-c.pid, unix.SIGKILL)
			}
		default:
			closeFDs(got)
			return fmt.Errorf("unexpected record %s", recName(r.typ))
		}
	}
}

// start runs c as call id with fds as its stdin, stdout and stderr (the
// caller closes them after). Its error is the socket's: a call that
// cannot start is reported to the Jail as the helper would report it.
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
	pid, err := syscall.ForkExec(path, c.argv, &syscall.ProcAttr{
		Env:   c.env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fail(ExitNotConfined, "exec %s: %v", c.argv[0], err)
	}
	s.calls[id] = &supCall{pid: pid}
	s.byPid[pid] = id
	return nil
}

// reapAll reaps every call that has ended and reports its status. A
// command that asked to be traced (PTRACE_TRACEME, which the filter
// allows) reports its stops here too: only its end counts.
func (s *supervisor) reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if ws.Stopped() || ws.Continued() {
			continue
		}
		id, ok := s.byPid[pid]
		if !ok {
			continue
		}
		delete(s.byPid, pid)
		delete(s.calls, id)
		_ = s.reply(record{typ: recExit, id: id, n: uint32(ws)})
	}
}

func (s *supervisor) reply(r record) error {
	_, _, err := s.conn.WriteMsgUnix(appendRecord(nil, r), nil, nil)
	return err
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
