//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runIn runs argv through jl.Run with ctx and returns its output.
func runSup(t *testing.T, ctx context.Context, jl *Jail, spec Spec, stdin string, argv ...string) (string, syscall.WaitStatus, error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = spec.Root, Env(spec, os.Environ())
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	ws, err := jl.Run(ctx, cmd)
	return out.String(), ws, err
}

func supervisedJail(t *testing.T, s Settings) (*jail, *Jail) {
	t.Helper()
	requireCgroups(t)
	j := newJail(t, s)
	jl, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jl.Close() })
	return j, jl
}

// supPid is the pid of jl's running supervisor (0: none).
func supPid(jl *Jail) int {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	if jl.sup == nil {
		return 0
	}
	return jl.sup.pid
}

// One supervisor serves every call of a job, each with its own
// arguments, environment, directory and stdio, and reports each status
// as the helper would, missing commands included.
func TestSupervisorServesAJob(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	ctx := context.Background()
	out, ws, err := runSup(t, ctx, jl, j.spec, "", "sh", "-c", `echo out; echo err >&2; pwd; echo "$HOME"; exit 3`)
	if err != nil || ws.ExitStatus() != 3 || out != "out\nerr\n"+j.spec.Root+"\n"+j.spec.TempDir+"\n" {
		t.Fatalf("err %v, status %v, output %q", err, ws, out)
	}
	pid := supPid(jl)
	if pid == 0 {
		t.Fatalf("no supervisor: %v", jl.noSup)
	}
	if out, _, err := runSup(t, ctx, jl, j.spec, "from stdin\n", "sh", "-c", "cat; sleep 0"); err != nil || out != "from stdin\n" {
		t.Errorf("stdin: %v %q", err, out)
	}
	if err := os.Mkdir(filepath.Join(j.spec.Root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("pwd")
	cmd.Dir, cmd.Env = filepath.Join(j.spec.Root, "sub"), Env(j.spec, os.Environ())
	var b strings.Builder
	cmd.Stdout = &b
	if _, err := jl.Run(ctx, cmd); err != nil || b.String() != cmd.Dir+"\n" {
		t.Errorf("dir: %v %q", err, b.String())
	}
	out, ws, err = runSup(t, ctx, jl, j.spec, "", "no-such-command-odek")
	if err != nil || ws.ExitStatus() != ExitNotFound || !strings.Contains(out, "odek sandbox:") || !strings.Contains(out, "no-such-command-odek") {
		t.Errorf("a missing command: err %v, status %d, %q", err, ws.ExitStatus(), out)
	}
	out, ws, err = runSup(t, ctx, jl, j.spec, "", j.other+"/secret.txt")
	if err != nil || ws.ExitStatus() == 0 || strings.Contains(out, "secret") && !strings.Contains(out, "odek sandbox:") {
		t.Errorf("another chat's file as the command: err %v, status %d, %q", err, ws.ExitStatus(), out)
	}
	if got := supPid(jl); got != pid {
		t.Errorf("the job's supervisor changed from %d to %d", pid, got)
	}
}

// A cancelled call's whole process group dies, and the supervisor goes
// on serving the job.
func TestSupervisorCancelKillsTheCallsGroup(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	marker := fmt.Sprintf("%d.%06d", 6000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var ws syscall.WaitStatus
	var err error
	go func() {
		defer close(done)
		_, ws, err = runSup(t, ctx, jl, j.spec, "", "sh", "-c", fmt.Sprintf("sleep %[1]s & sleep %[1]s; echo never", marker))
	}()
	deadline := time.Now().Add(10 * time.Second)
	// The shell and its two sleeps hold the marker.
	for len(alive(t, marker)) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(alive(t, marker)); n != 3 {
		t.Fatalf("%d processes, want the shell and 2 sleeps", n)
	}
	pid := supPid(jl)
	cancel()
	<-done
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the cancelled call: err %v, status %v", err, ws)
	}
	if pids := waitGone(t, marker); len(pids) > 0 {
		t.Errorf("the cancelled call's background process lives on: %v", pids)
	}
	if out, _, err := runSup(t, context.Background(), jl, j.spec, "", "echo", "again"); err != nil || out != "again\n" || supPid(jl) != pid {
		t.Errorf("after a cancel: %v %q (supervisor %d, was %d)", err, out, supPid(jl), pid)
	}
}

// A command that kills its supervisor fails its own call with a clear
// error, and the next call gets a new supervisor. A supervisor killed
// from outside mid-call does the same.
func TestSupervisorDeathFailsTheCallClosed(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	ctx := context.Background()
	if _, _, err := runSup(t, ctx, jl, j.spec, "", "true"); err != nil {
		t.Fatal(err)
	}
	first := supPid(jl)
	// From inside: the supervisor is the shell's parent, in its domain.
	out, ws, err := runSup(t, ctx, jl, j.spec, "", "sh", "-c", "kill -9 $PPID; sleep 5")
	if err == nil {
		// Signal scoping kept the command from its supervisor: the call
		// ran to its end and the supervisor lives.
		t.Logf("the command could not kill its supervisor (status %v, %q)", ws, out)
		if supPid(jl) != first || jl.sup.isDead() {
			t.Fatalf("the supervisor changed although the call succeeded")
		}
	} else if !errors.Is(err, errSupervisorDied) {
		t.Fatalf("a killed supervisor: %v", err)
	}
	// From outside, mid-call.
	res := make(chan error, 1)
	go func() {
		_, _, err := runSup(t, ctx, jl, j.spec, "", "sleep", "30")
		res <- err
	}()
	time.Sleep(200 * time.Millisecond)
	jl.mu.Lock()
	s := jl.sup
	jl.mu.Unlock()
	_ = s.proc.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-res:
		if !errors.Is(err, errSupervisorDied) || !strings.Contains(err.Error(), "next command starts a new supervisor") {
			t.Errorf("a call whose supervisor died: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a call whose supervisor died did not return")
	}
	out, _, err = runSup(t, ctx, jl, j.spec, "", "echo", "fresh")
	if err != nil || out != "fresh\n" {
		t.Fatalf("after the supervisor died: %v %q", err, out)
	}
	if p := supPid(jl); p == 0 || p == s.pid {
		t.Errorf("no new supervisor: %d (the dead one was %d)", p, s.pid)
	}
}

// The supervisor's socket never reaches a command, a command cannot
// start a session or join another process group, and the supervisor
// runs in the job's cgroup, confined and not dumpable.
func TestSupervisorSocketStaysItsOwn(t *testing.T) {
	requirePython(t)
	j, jl := supervisedJail(t, Settings{})
	ctx := context.Background()
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Dir, cmd.Env = j.spec.Root, append(Env(j.spec, os.Environ()), childEnv+"=fds")
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	if _, err := jl.Run(ctx, cmd); err != nil || !strings.Contains(b.String(), "listed") {
		t.Fatalf("%v %q", err, b.String())
	}
	if strings.Contains(b.String(), fmt.Sprintf("mode %o", syscall.S_IFSOCK)) {
		t.Errorf("a command holds a socket it did not make:\n%s", b.String())
	}
	out, _, err := runSup(t, ctx, jl, j.spec, "", python3, "-c", `import os
for name, f in (("setsid", os.setsid), ("setpgid other", lambda: os.setpgid(0, os.getppid())), ("setpgid own", lambda: os.setpgid(0, 0))):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, e.strerror)`)
	if err != nil || !strings.Contains(out, "setsid Operation not permitted") || !strings.Contains(out, "setpgid other Operation not permitted") {
		t.Errorf("session and group changes: %v\n%s", err, out)
	}
	pid := supPid(jl)
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil || !strings.Contains(string(cg), filepath.Base(jl.Spec().Cgroup)) {
		t.Errorf("the supervisor is not in the job's cgroup %s: %v\n%s", jl.Spec().Cgroup, err, cg)
	}
	// Not dumpable: /proc/<pid>/environ and fd become root's; the
	// supervisor's own status says it is under seccomp with no_new_privs.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil || !strings.Contains(string(status), "NoNewPrivs:\t1") || !strings.Contains(string(status), "Seccomp:\t2") {
		t.Errorf("the supervisor's status: %v\n%s", err, status)
	}
	// No thread of it holds a capability, whoever started it (root
	// here, when the tests run as root). A cgo build (this test binary
	// may be one) cannot drop them from every thread: there, the
	// confined thread, which forks the commands, has none.
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the supervisor's threads: %v", err)
	}
	_, _, cgo := syscall.AllThreadsSyscall(syscall.SYS_GETPID, 0, 0, 0)
	capless := 0
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			t.Fatal(err)
		}
		none := true
		for _, field := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
			none = none && strings.Contains(string(b), field+":\t0000000000000000\n")
		}
		if none {
			capless++
		} else if cgo == 0 {
			t.Errorf("thread %s of the supervisor has capabilities:\n%s", task.Name(), b)
		}
	}
	if capless == 0 {
		t.Errorf("every thread of the supervisor has capabilities")
	}
	fi, err := os.Stat(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("/proc/%d/environ belongs to uid %d: the supervisor is dumpable", pid, st.Uid)
	}
}

// Without a cgroup, or with a helper that cannot supervise (an older
// odek-sandbox), Run starts each command through the helper, and a
// helper that refuses the spec fails the call with its reason.
func TestJailRunFallsBackToTheHelper(t *testing.T) {
	requireLandlock(t)
	j := newJail(t, Settings{})
	spec := j.spec
	spec.LockSession = true
	noCgroup := jailWith(spec, func(jobLimits) (*jobCgroup, error) { return nil, errors.New("none here") })
	defer noCgroup.Close()
	out, ws, err := runSup(t, context.Background(), noCgroup, spec, "", "sh", "-c", "echo helped; exit 4")
	if err != nil || ws.ExitStatus() != 4 || out != "helped\n" || noCgroup.sup != nil {
		t.Errorf("without a cgroup: %v %d %q (supervisor %v)", err, ws.ExitStatus(), out, noCgroup.sup)
	}

	requireCgroups(t)
	// Limits a supervisor cannot live under.
	for _, s := range []Settings{{MaxMemoryMB: 512}, {MaxProcesses: 16}} {
		small := newJail(t, s)
		jl, err := NewJail(small.spec)
		if err != nil {
			t.Fatal(err)
		}
		out, ws, err := runSup(t, context.Background(), jl, small.spec, "", "sh", "-c", "echo helped")
		pid, why := jl.Supervisor()
		if err != nil || ws.ExitStatus() != 0 || out != "helped\n" || pid != 0 || why == nil || !strings.Contains(why.Error(), "below the supervisor's") {
			t.Errorf("%+v: %v %d %q (supervisor %d: %v)", s, err, ws.ExitStatus(), out, pid, why)
		}
		jl.Close()
	}
	if _, err := executable(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(t.TempDir(), "odek-sandbox")
	script := fmt.Sprintf("#!/bin/sh\necho 'odek sandbox: bad spec: json: unknown field \"from_the_future\"' >&2\nexit %d\n", ExitUsage)
	if err := os.WriteFile(stale, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := exePath
	exePath = stale
	defer func() { exePath = saved }()
	jl, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	out, ws, err = runSup(t, context.Background(), jl, j.spec, "", "sh", "-c", "echo ran")
	if err != nil || ws.ExitStatus() != ExitUsage || strings.Contains(out, "ran") || !strings.Contains(out, "from_the_future") {
		t.Errorf("a stale helper: %v %d %q", err, ws.ExitStatus(), out)
	}
	if jl.sup != nil || jl.noSup == nil || !strings.Contains(jl.noSup.Error(), "from_the_future") {
		t.Errorf("the supervisor's failure: %v", jl.noSup)
	}
}

// The Jail reads the supervisor's records as untrusted: a record it
// cannot parse, one for a call that is not running, or descriptors end
// the supervisor (killed), and its calls fail closed.
func TestSupervisorClientRefusesBadRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(fd int) error
		want string
	}{
		{"garbage", func(fd int) error { return unix.Sendmsg(fd, []byte("garbage!"), nil, nil, 0) }, "shorter than the 13-byte header"},
		{"unknown call", func(fd int) error {
			return unix.Sendmsg(fd, appendRecord(nil, record{typ: recExit, id: 99}), nil, nil, 0)
		}, "call 99, which is not running"},
		{"ready again", func(fd int) error {
			return unix.Sendmsg(fd, appendRecord(nil, record{typ: recReady}), nil, nil, 0)
		}, "unexpected record ready"},
		{"descriptors", func(fd int) error {
			return unix.Sendmsg(fd, appendRecord(nil, record{typ: recExit, id: 1}), unix.UnixRights(0), nil, 0)
		}, "sent descriptors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, peer := fakeSupervisor(t)
			ch := make(chan uint32, 1)
			s.mu.Lock()
			s.calls[1] = ch
			s.mu.Unlock()
			if err := tc.send(peer); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.dead:
			case <-time.After(10 * time.Second):
				t.Fatal("the bad record was taken")
			}
			if !strings.Contains(s.why.Error(), tc.want) {
				t.Errorf("why: %v, want %q", s.why, tc.want)
			}
			if _, ok := s.await(context.Background(), 1, ch); ok {
				t.Error("a call of a dead supervisor got a status")
			}
			if err := s.proc.Wait(); err == nil {
				t.Error("the bad supervisor was not killed")
			}
		})
	}
}

// fakeSupervisor is a supClient whose process is a sleep and whose peer
// end the test writes.
func fakeSupervisor(t *testing.T) (*supClient, int) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(pair[1]) })
	f := os.NewFile(uintptr(pair[0]), "test")
	c, err := netFileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	proc := exec.Command("sleep", "60")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill() })
	s := &supClient{proc: proc, conn: c, pid: proc.Process.Pid, calls: map[uint64]chan uint32{}, dead: make(chan struct{}), exited: make(chan struct{})}
	go s.readLoop()
	return s, pair[1]
}

func netFileConn(f *os.File) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// A supervisor that stops answering (a command stopped it with SIGSTOP)
// cannot hold a cancelled call: after killGrace the Jail kills it, the
// call fails closed, and the next call gets a new supervisor.
func TestSupervisorStoppedIsReplaced(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	saved := killGrace
	killGrace = 300 * time.Millisecond
	defer func() { killGrace = saved }()
	if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "true"); err != nil {
		t.Fatal(err)
	}
	pid := supPid(jl)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := runSup(t, ctx, jl, j.spec, "", "sleep", "30")
	if !errors.Is(err, errSupervisorDied) || !strings.Contains(err.Error(), "did not end a cancelled call") {
		t.Fatalf("a call of a stopped supervisor: %v", err)
	}
	out, _, err := runSup(t, context.Background(), jl, j.spec, "", "echo", "fresh")
	if err != nil || out != "fresh\n" || supPid(jl) == pid {
		t.Errorf("after a stopped supervisor: %v %q (pid %d, was %d)", err, out, supPid(jl), pid)
	}
}

// Calls of one job run at once through one supervisor, each with its
// own output.
func TestSupervisorConcurrentCalls(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			out, ws, err := runSup(t, context.Background(), jl, j.spec, strings.Repeat(fmt.Sprint(i), 100000), "sh", "-c", fmt.Sprintf("sleep 0.1; wc -c; exit %d", i))
			if err == nil && (ws.ExitStatus() != i || strings.TrimSpace(out) != "100000") {
				err = fmt.Errorf("call %d: status %d, output %q", i, ws.ExitStatus(), out)
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The job's CPU limit kills the supervisor with the command (the whole
// cgroup): the call reports the command killed, as without a
// supervisor, and the job's later calls are refused with ErrJobCPU.
func TestSupervisorCallUnderTheJobsCPULimit(t *testing.T) {
	requireCgroups(t)
	if where, _ := CgroupStatus(); strings.Contains(where, "no CPU accounting") {
		t.Skipf("no CPU accounting for job cgroups: %s", where)
	}
	j, jl := supervisedJail(t, Settings{JobCPUSeconds: 1})
	out, ws, err := runSup(t, context.Background(), jl, j.spec, "", "sh", "-c", "while :; do :; done")
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the busy loop: err %v, status %v, %q", err, ws, out)
	}
	if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "true"); !errors.Is(err, ErrJobCPU) {
		t.Errorf("a later call: %v, want ErrJobCPU", err)
	}
}

// A command whose parent is its supervisor tries for the supervisor's
// socket and memory: pidfd_getfd of its descriptors 3–15,
// process_vm_readv, ptrace, /proc/<pid>/fd/N and /proc/<pid>/mem. Each
// is refused.
func TestSupervisorCannotBeReachedByItsCommands(t *testing.T) {
	requirePython(t)
	j, jl := supervisedJail(t, Settings{})
	script := `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    r = libc.syscall(*args)
    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")
sup = os.getppid()
print("parent", sup)
pidfd = libc.syscall(434, sup, 0)
print("pidfd_open", "ok" if pidfd >= 0 else os.strerror(ctypes.get_errno()))
for fd in range(3, 16):
    call("pidfd_getfd %d" % fd, 438, pidfd, fd, 0)
iov = (ctypes.c_char * 16)()
class IOV(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = IOV(ctypes.cast(iov, ctypes.c_void_p), 16)
remote = IOV(0x400000, 16)
call("process_vm_readv", 310, sup, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
call("ptrace_attach", 101, 16, sup, 0, 0)
for p in ["/proc/%d/fd/%d" % (sup, fd) for fd in range(3, 16)] + ["/proc/%d/mem" % sup]:
    try:
        open(p, "rb"); print("opened", p)
    except OSError as e:
        print("open", p, e.strerror)
`
	out, _, err := runSup(t, context.Background(), jl, j.spec, "", python3, "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf("parent %d\n", supPid(jl))) {
		t.Fatalf("the command's parent is not its supervisor %d:\n%s", supPid(jl), out)
	}
	for _, want := range []string{"pidfd_getfd 3 -1 Operation not permitted", "process_vm_readv -1 Operation not permitted", "ptrace_attach -1 Operation not permitted"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q:\n%s", want, out)
		}
	}
	// Landlock refuses the opens (a missing descriptor's path fails its
	// lookup first, with ENOENT).
	if strings.Contains(out, "opened") || strings.Count(out, "Operation not permitted") < 15 || !strings.Contains(out, "mem Permission denied") {
		t.Errorf("the supervisor's descriptors or memory were reached:\n%s", out)
	}
}

// The job's end ends every process its supervised calls left, those
// that left their call's process group (setpgid(0, 0), which the
// supervisor's filter lets through) included, and only those.
func TestSupervisorJobEndEndsEverything(t *testing.T) {
	requirePython(t)
	j, jl := supervisedJail(t, Settings{})
	base := fmt.Sprintf("%d.%06d", 8000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	marker, other := base+"1", base+"2"
	script := survivorScript(marker) + fmt.Sprintf("; %s -c 'import os, subprocess; os.setpgid(0, 0); subprocess.Popen([\"sleep\", \"%s\"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)' 2>&1", python3, marker)
	if out, ws, err := runSup(t, context.Background(), jl, j.spec, "", "sh", "-c", script); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("%v %v %s", err, ws, out)
	}
	b, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := runSup(t, context.Background(), b, j.spec, "", "sh", "-c", fmt.Sprintf("sleep %s >/dev/null 2>&1 &", other)); err != nil {
		t.Fatal(err)
	}
	// Background, nohup, double fork and the group leaver; setsid is
	// refused.
	deadline := time.Now().Add(10 * time.Second)
	for len(alive(t, marker)) < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(alive(t, marker)); n != 4 {
		t.Fatalf("%d survivors before Close, want 4", n)
	}
	if err := jl.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := waitGone(t, marker); len(pids) > 0 {
		t.Errorf("processes of the closed job live on: %v", pids)
	}
	if len(alive(t, other)) != 1 {
		t.Errorf("the other job's process was killed")
	}
}

// Running counts what a job's commands left, not the job's supervisor.
func TestSupervisorIsNotARunningProcess(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "true"); err != nil {
		t.Fatal(err)
	}
	if supPid(jl) == 0 || jl.Running() {
		t.Fatalf("after a call that left nothing: supervisor %d, Running %v", supPid(jl), jl.Running())
	}
	if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "sh", "-c", "sleep 30 >/dev/null 2>&1 &"); err != nil {
		t.Fatal(err)
	}
	if !jl.Running() {
		t.Error("a call's background process is not running")
	}
}

// A stopped supervisor cannot hold a call whose records fill its
// socket: the write times out, the supervisor is killed, and the call
// fails closed.
func TestSupervisorThatStopsReadingIsKilled(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	saved := sendTimeout
	sendTimeout = 300 * time.Millisecond
	defer func() { sendTimeout = saved }()
	if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "true"); err != nil {
		t.Fatal(err)
	}
	pid := supPid(jl)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100000)
	env := make([]string, 0, 30)
	for i := 0; i < 30; i++ {
		env = append(env, fmt.Sprintf("V%d=%s", i, big)) // 3 MB of records
	}
	cmd := exec.Command("true")
	cmd.Dir, cmd.Env = j.spec.Root, env
	done := make(chan error, 1)
	go func() {
		_, err := jl.Run(context.Background(), cmd)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errSupervisorDied) || !strings.Contains(err.Error(), "send a call") {
			t.Errorf("a call to a supervisor that stopped reading: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call to a stopped supervisor did not return")
	}
	if out, _, err := runSup(t, context.Background(), jl, j.spec, "", "echo", "fresh"); err != nil || out != "fresh\n" || supPid(jl) == pid {
		t.Errorf("after it: %v %q", err, out)
	}
}

// The supervisor starts with a long timer slack for its runtime's
// sysmon; its commands get the worker's back.
func TestSupervisorCommandsKeepTheTimerSlack(t *testing.T) {
	requirePython(t)
	j, jl := supervisedJail(t, Settings{})
	runtime.LockOSThread()
	want, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		out, _, err := runSup(t, context.Background(), jl, j.spec, "", python3, "-c", "import ctypes; print(ctypes.CDLL(None).prctl(30, 0, 0, 0, 0))")
		if err != nil || strings.TrimSpace(out) != fmt.Sprint(want) {
			t.Errorf("a command's timer slack: %v %q, want %d (the worker's)", err, out, want)
		}
	}
	if supPid(jl) == 0 {
		t.Error("no supervisor ran the commands")
	}
}

// Starting supervisors leaves the worker's threads as they were: a root
// worker's later commands, started by any of its threads, still get
// root's capabilities (the supervisor's start sets SECBIT_NOROOT and a
// long timer slack on the thread that forks it, and puts both back).
func TestSupervisorStartLeavesTheWorkersThreads(t *testing.T) {
	requireCgroups(t)
	if os.Geteuid() != 0 {
		t.Skip("root's capabilities are what is checked")
	}
	want := func() string {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "CapEff:") {
				return l
			}
		}
		return ""
	}()
	j := newJail(t, Settings{})
	for i := 0; i < 10; i++ {
		jl, err := NewJail(j.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "true"); err != nil || supPid(jl) == 0 {
			t.Fatalf("%v (supervisor %d)", err, supPid(jl))
		}
		jl.Close()
	}
	errs := make(chan error, 40)
	for i := 0; i < cap(errs); i++ {
		go func() {
			out, err := exec.Command("grep", "^CapEff:", "/proc/self/status").Output()
			if err == nil && strings.TrimSpace(string(out)) != want {
				err = fmt.Errorf("a command of the worker has %q, want %q", strings.TrimSpace(string(out)), want)
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The serving loop passes through the scheduler after every wake
// (supervisor.yield) and ends the supervisor if it ever came back on
// another thread than the confined one: a long series of calls, one at
// a time and some at once, is served by the one supervisor.
func TestSupervisorServesManyCallsOnItsThread(t *testing.T) {
	j, jl := supervisedJail(t, Settings{})
	if _, _, err := runSup(t, context.Background(), jl, j.spec, "", "true"); err != nil {
		t.Fatal(err)
	}
	pid := supPid(jl)
	for i := 0; i < 150; i++ {
		if out, ws, err := runSup(t, context.Background(), jl, j.spec, "", "sh", "-c", "echo $0", fmt.Sprint(i)); err != nil || ws.ExitStatus() != 0 || out != fmt.Sprintf("%d\n", i) {
			t.Fatalf("call %d: %v %v %q", i, err, ws, out)
		}
	}
	errs := make(chan error, 50)
	for i := 0; i < cap(errs); i++ {
		go func() {
			_, _, err := runSup(t, context.Background(), jl, j.spec, "", "true")
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := supPid(jl); got != pid {
		t.Errorf("the supervisor changed from %d to %d", pid, got)
	}
}
