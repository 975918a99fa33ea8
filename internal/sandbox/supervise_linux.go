//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A Jail's end of its job's supervisor (supervisor_linux.go).
//
// Why: every confined command used to start through the helper, a Go
// binary that confines itself and execs the command — about 6–7 ms of CPU
// per shell call against 1 ms for `sh -c true` (docs/BENCHMARKS.md). The
// supervisor confines itself once per job and forks each command from
// its confined thread, so a call costs a fork and an exec of the command
// and two records on a socket.
//
// When: Jail.Run uses it where the job has a cgroup (which ends every
// process of the job whatever process group it is in: the supervisor's
// filter must let setpgid(0, 0) through to give each call its group).
// Without a cgroup, or when the supervisor cannot start (an older
// odek-sandbox that does not know SuperviseArg, say), Run starts the
// command through the helper as Start does, for the rest of the job.
//
// A supervisor that dies (a command may kill it: it runs in the job's
// domain) fails the calls it was running with errSupervisorDied, and the
// next call starts a new one. A malformed record, descriptors where
// none are expected, or no answer to a kill within killGrace count as
// death: the Jail kills the supervisor itself. docs/SECURITY.md says why
// a job gains nothing by talking to, killing or racing it.

// errSupervisorDied is a call's error when its job's supervisor ended
// before reporting the command's status.
var errSupervisorDied = errors.New("sandbox: the job's supervisor process ended before the command did (a command may have killed it); the command's status is unknown, and the next command starts a new supervisor")

const (
	// supervisorStartTimeout bounds the wait for recReady.
	supervisorStartTimeout = 30 * time.Second
)

// supervisorSlack is the timer slack a supervisor starts with: what its
// runtime's sysmon thread, which wakes on timed sleeps, inherits. Its
// sleeps of 20 µs and up then last up to 10 ms, so around each call it
// wakes a few times instead of ~12 (~23 µs of CPU each here), and its
// retakes of the one P come too late to matter for calls shorter than
// that. The supervisor sets its confined thread back to the slack this
// process had (slackEnv), so its commands keep the worker's.
const supervisorSlack = 10 * time.Millisecond

// slackEnv names the timer slack (ns) the supervisor restores on its
// confined thread.
const slackEnv = "ODEK_TIMERSLACK_NS"

// secbitNoRoot is SECBIT_NOROOT: uid 0 gains no capabilities by exec.
const secbitNoRoot = 1 << 0

// startSupervisorProc starts the supervisor's process from a thread of
// its own, set up for it and then put back:
//
//   - its timer slack at slack (a child inherits it across fork and
//     exec; see supervisorSlack);
//   - SECBIT_NOROOT, where this process may set it (a root worker): the
//     supervisor, though uid 0, then starts with no capability at all,
//     so no thread of it ever holds one, and it skips dropping them from
//     every thread (AllThreadsSyscall stops the world and spins in
//     sched_yield until each thread ran the call: 0.3–0.5 ms of CPU a
//     job on this loaded VM, perf). Its cgroup joins and the ruleset's
//     opens need none as root, the owner of the job's files; a granted
//     path that root could reach only by its capabilities makes it fail
//     to confine itself, and the job goes through the helper.
//
// A setting that cannot be made is left as it was; one that cannot be
// put back ends the thread with its goroutine (it stays locked), so no
// other goroutine of the worker runs on it.
func startSupervisorProc(cmd *exec.Cmd, slack time.Duration) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean := true
		oldSlack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		slackSet := err == nil && oldSlack > 0 && unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0) == nil
		if slackSet {
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", slackEnv, oldSlack))
		}
		bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
		noRoot := err == nil && bits&secbitNoRoot == 0 && unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits|secbitNoRoot), 0, 0, 0) == nil
		started <- cmd.Start()
		if noRoot && unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0) != nil {
			clean = false
		}
		if slackSet && unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(oldSlack), 0, 0, 0) != nil {
			clean = false
		}
		if clean {
			runtime.UnlockOSThread()
		}
	}()
	return <-started
}

// killGrace is how long a cancelled call waits for its status after the
// kill; a supervisor that takes longer is killed. sendTimeout bounds the
// writing of a call's records (up to 4 MiB) to a supervisor that does
// not read them. Variables for tests.
var (
	killGrace   = 5 * time.Second
	sendTimeout = 10 * time.Second
)

// supClient is a Jail's connection to its running supervisor.
type supClient struct {
	proc *exec.Cmd
	conn *net.UnixConn
	pid  int

	wmu  sync.Mutex // one call's records at a time
	next atomic.Uint64

	mu    sync.Mutex
	calls map[uint64]chan uint32

	failOnce sync.Once
	dead     chan struct{} // closed by fail
	why      error         // set before dead closes
	exited   chan struct{} // closed once the process is reaped
}

// startSupervisor starts a supervisor confined by spec and waits for
// its recReady.
func startSupervisor(spec Spec, specJSON string) (*supClient, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("find the helper: %v", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %v", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "supervisor"), os.NewFile(uintptr(pair[1]), "supervisor")
	defer theirs.Close()
	cmd := exec.Command(exe, SuperviseArg, specJSON)
	// Nothing of the worker's environment, which it does not need (each
	// call brings its own), and one P (supervisor_linux.go says why).
	cmd.Dir, cmd.Env = spec.Root, []string{"GOMAXPROCS=1"}
	cmd.ExtraFiles = []*os.File{theirs}
	// Its stderr, read only if it does not start (it says why there): a
	// pipe of its own rather than a Writer, for which exec.Cmd would
	// copy through a goroutine of this process for the supervisor's
	// life. It points stderr at /dev/null before it is ready.
	errR, errW, err := os.Pipe()
	if err != nil {
		mine.Close()
		return nil, err
	}
	defer errR.Close()
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = startSupervisorProc(cmd, supervisorSlack)
	errW.Close()
	if err != nil {
		mine.Close()
		return nil, err
	}
	theirs.Close()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	conn := c.(*net.UnixConn)
	buf := make([]byte, maxRecord+1)
	_ = conn.SetReadDeadline(time.Now().Add(supervisorStartTimeout))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, nil)
	var r record
	if err == nil && n == 0 {
		err = io.EOF
	}
	if err == nil && oobn != 0 {
		err = errors.New("descriptors with its first record")
	}
	if err == nil {
		if r, err = parseRecord(buf[:n]); err == nil && r.typ != recReady {
			err = fmt.Errorf("its first record is %s, not ready", recName(r.typ))
		}
	}
	if err != nil {
		conn.Close()
		_ = cmd.Process.Kill()
		werr := cmd.Wait()
		// Dead and reaped, so the pipe's writers are gone (a process of
		// its own that kept stderr is bounded by the deadline).
		_ = errR.SetReadDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(io.LimitReader(errR, 4<<10))
		msg := strings.TrimSpace(string(b))
		if msg == "" && werr != nil {
			msg = werr.Error()
		}
		return nil, fmt.Errorf("the supervisor did not start (%v): %s", err, msg)
	}
	_ = conn.SetReadDeadline(time.Time{})
	s := &supClient{proc: cmd, conn: conn, pid: cmd.Process.Pid, calls: map[uint64]chan uint32{}, dead: make(chan struct{}), exited: make(chan struct{})}
	go func() { // reaps it whenever it ends
		_ = cmd.Wait()
		close(s.exited)
	}()
	go s.readLoop()
	return s, nil
}

// readLoop reads the supervisor's records: one recExit per call started.
func (s *supClient) readLoop() {
	buf := make([]byte, maxRecord+1)
	oob := make([]byte, unix.CmsgSpace(4*callFDs))
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			fds, _ := rightsOf(oob[:oobn])
			closeFDs(fds)
			s.fail(errors.New("it sent descriptors"))
			return
		}
		switch {
		case err != nil:
			s.fail(fmt.Errorf("its socket: %v", err))
			return
		case n == 0:
			s.fail(errors.New("it closed its socket"))
			return
		case flags&unix.MSG_TRUNC != 0:
			s.fail(fmt.Errorf("a record over %d bytes", maxRecord))
			return
		}
		r, err := parseRecord(buf[:n])
		if err == nil && r.typ != recExit {
			err = fmt.Errorf("unexpected record %s", recName(r.typ))
		}
		if err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		ch, ok := s.calls[r.id]
		delete(s.calls, r.id)
		s.mu.Unlock()
		if !ok {
			s.fail(fmt.Errorf("a status for call %d, which is not running", r.id))
			return
		}
		ch <- r.n // buffered: the call may be gone
	}
}

// fail marks the supervisor dead for why and kills it (through the
// pidfd exec.Cmd holds, so never another process).
func (s *supClient) fail(why error) {
	s.failOnce.Do(func() {
		s.why = why
		close(s.dead)
		s.conn.Close()
		_ = s.proc.Process.Kill()
	})
}

// end kills the supervisor and waits up to wait for it to be reaped.
func (s *supClient) end(why error, wait time.Duration) {
	s.fail(why)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
	}
}

func (s *supClient) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

func (s *supClient) diedErr() error {
	return fmt.Errorf("%w (%v)", errSupervisorDied, s.why)
}

// send writes call id's records, the first with the three descriptors.
func (s *supClient) send(id uint64, body []byte, fds [callFDs]*os.File) error {
	recs := callRecords(id, body)
	rights := unix.UnixRights(int(fds[0].Fd()), int(fds[1].Fd()), int(fds[2].Fd()))
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// A supervisor that stops reading (a command stopped it) must not
	// hold this call, or the next, past a bound: the write fails, and the
	// caller kills it.
	_ = s.conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	defer s.conn.SetWriteDeadline(time.Time{})
	for i, r := range recs {
		var oob []byte
		if i == 0 {
			oob = rights
		}
		if _, _, err := s.conn.WriteMsgUnix(r, oob, nil); err != nil {
			return err
		}
	}
	return nil
}

func (s *supClient) kill(id uint64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	defer s.conn.SetWriteDeadline(time.Time{})
	if _, _, err := s.conn.WriteMsgUnix(appendRecord(nil, record{typ: recKill, id: id}), nil, nil); err != nil {
		go s.fail(fmt.Errorf("send a kill: %v", err))
	}
}

// run runs cmd as one call and waits for its status and its output.
func (s *supClient) run(ctx context.Context, cmd *exec.Cmd, spec Spec) (syscall.WaitStatus, error) {
	argv := cmd.Args
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}
	env := cmd.Env
	if env == nil {
		env = Env(spec, os.Environ()) // never the worker's own
	}
	body, err := encodeCall(call{argv: argv, env: dedupEnv(env), dir: cmd.Dir})
	if err != nil {
		return 0, err
	}
	cio, err := newCallIO(cmd)
	if err != nil {
		return 0, err
	}
	id := s.next.Add(1)
	ch := make(chan uint32, 1)
	s.mu.Lock()
	s.calls[id] = ch
	s.mu.Unlock()
	err = s.send(id, body, cio.child)
	cio.closeChild()
	if err != nil {
		s.fail(fmt.Errorf("send a call: %v", err))
		cio.abort()
		return 0, s.diedErr()
	}
	status, ok := s.await(ctx, id, ch)
	if !ok {
		cio.abort()
		return 0, s.diedErr()
	}
	return syscall.WaitStatus(status), cio.wait(cmd.WaitDelay)
}

// await is call id's status; false when the supervisor died first. A
// done ctx kills the call's process group.
func (s *supClient) await(ctx context.Context, id uint64, ch chan uint32) (uint32, bool) {
	select {
	case st := <-ch:
		return st, true
	case <-s.dead:
	case <-ctx.Done():
		s.kill(id)
		t := time.NewTimer(killGrace)
		defer t.Stop()
		select {
		case st := <-ch:
			return st, true
		case <-s.dead:
		case <-t.C:
			s.fail(fmt.Errorf("it did not end a cancelled call within %s", killGrace))
		}
	}
	select { // a status that came with the end
	case st := <-ch:
		return st, true
	default:
		return 0, false
	}
}

// callIO is a call's stdin, stdout and stderr: the command's ends, sent
// to the supervisor, and this process's, copied as exec.Cmd copies them.
type callIO struct {
	child    [callFDs]*os.File
	opened   []*os.File // child ends this call made (closed once sent)
	readers  []*os.File // output pipes' read ends
	writers  []*os.File // the stdin pipe's write end
	copies   chan error
	nCopies  int
	closeOut sync.Once
}

// devNull is /dev/null, opened once and shared by every call.
var devNull = sync.OnceValues(func() (*os.File, error) { return os.OpenFile(os.DevNull, os.O_RDWR, 0) })

func newCallIO(cmd *exec.Cmd) (*callIO, error) {
	c := &callIO{copies: make(chan error, 2)}
	fail := func(err error) (*callIO, error) {
		c.closeChild()
		c.abort()
		return nil, err
	}
	switch in := cmd.Stdin.(type) {
	case nil:
		f, err := devNull()
		if err != nil {
			return fail(err)
		}
		c.child[0] = f
	case *os.File:
		c.child[0] = in
	default:
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		c.child[0], c.opened, c.writers = r, append(c.opened, r), append(c.writers, w)
		go func() {
			_, _ = io.Copy(w, in) // the command may not read it all
			w.Close()
		}()
	}
	for i, out := range []io.Writer{cmd.Stdout, cmd.Stderr} {
		if i == 1 && out != nil && sameWriter(out, cmd.Stdout) {
			c.child[2] = c.child[1]
			continue
		}
		switch w := out.(type) {
		case nil:
			f, err := devNull()
			if err != nil {
				return fail(err)
			}
			c.child[1+i] = f
		case *os.File:
			c.child[1+i] = w
		default:
			r, pw, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			c.child[1+i], c.opened, c.readers = pw, append(c.opened, pw), append(c.readers, r)
			c.nCopies++
			go func() {
				_, err := io.Copy(w, r)
				c.copies <- err
			}()
		}
	}
	return c, nil
}

// sameWriter is a == b, false for types that cannot be compared.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// closeChild closes the command's ends this call made: the supervisor
// has its own copies once they are sent.
func (c *callIO) closeChild() {
	for _, f := range c.opened {
		f.Close()
	}
	c.opened = nil
}

func (c *callIO) closeReaders() {
	c.closeOut.Do(func() {
		for _, f := range c.readers {
			f.Close()
		}
	})
}

// abort stops copying at once (the call failed).
func (c *callIO) abort() {
	c.closeReaders()
	for _, f := range c.writers {
		f.Close()
	}
}

// wait waits for the output to reach EOF — within delay after the
// command's end when delay > 0 (exec.Cmd.WaitDelay: a process the
// command left running may keep the pipes open), else for ever.
func (c *callIO) wait(delay time.Duration) error {
	var timeout <-chan time.Time
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		timeout = t.C
	}
	var first error
	for done := 0; done < c.nCopies; {
		select {
		case err := <-c.copies:
			done++
			if err != nil && first == nil {
				first = err
			}
		case <-timeout:
			c.closeReaders()
			for ; done < c.nCopies; done++ {
				<-c.copies
			}
			return exec.ErrWaitDelay
		}
	}
	c.closeReaders()
	return first
}

// dedupEnv keeps the last of each variable, as exec.Cmd does.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if !seen[k] {
			seen[k] = true
			out = append(out, env[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
