//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireCgroups skips where this process cannot make per-job cgroups,
// unless it runs as root on a machine that has them (this one), where
// the bound matters most and the test must run.
func requireCgroups(t *testing.T) {
	t.Helper()
	requireLandlock(t)
	if where, err := CgroupStatus(); err != nil {
		t.Skipf("no per-job cgroups here: %v", err)
	} else {
		t.Logf("per-job cgroups: %s", where)
	}
}

// RLIMIT_NPROC does not bind root, so a fork bomb of a job run by a root
// worker was unbounded. The job's cgroup bounds it: a job whose limit is
// 12 processes starts 40 background sleeps and at most 12 live (as root
// too: this test runs as root where it can); Close ends them and removes
// the cgroup. Another job's process is untouched.
func TestJailCgroupBoundsAJobsProcesses(t *testing.T) {
	requireCgroups(t)
	base := fmt.Sprintf("%d.%06d", 7000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	marker, other := base+"1", base+"2"
	j := newJail(t, Settings{MaxProcesses: 12})
	a, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt 40 ]; do sleep %s >/dev/null 2>&1 & i=$((i+1)); done; echo forked`, marker))
	cmd.Dir, cmd.Env = j.spec.Root, Env(j.spec, os.Environ())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := a.Start(cmd); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // fork failures may fail the shell
	startIn(t, b, j.spec, fmt.Sprintf("sleep %s >/dev/null 2>&1 &", other))
	// Each job's cgroup is made at its first command.
	if a.Spec().Cgroup == "" || a.Spec().Cgroup == b.Spec().Cgroup {
		t.Fatalf("jobs' cgroups: %q %q", a.Spec().Cgroup, b.Spec().Cgroup)
	}
	n := len(alive(t, marker))
	if n == 0 || n > 12 {
		t.Fatalf("%d of the job's 40 sleeps live, want 1…12 (pids.max 12; euid %d):\n%s", n, os.Geteuid(), out.String())
	}
	if !strings.Contains(out.String(), "fork") {
		t.Errorf("the shell saw no fork failure:\n%s", out.String())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := waitGone(t, marker); len(pids) > 0 {
		t.Errorf("the job's processes outlived its Close: %v", pids)
	}
	if len(alive(t, other)) != 1 {
		t.Errorf("another job's process was killed")
	}
	waitNoDir(t, a.Spec().Cgroup)
}

func waitNoDir(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the job's cgroup %s was not removed", dir)
			return
		}
	}
}

// An odek process killed with SIGKILL (a sub-agent child, say) cannot end
// its jobs, and a survivor of them lived on. Its parent ends them with
// KillJobsOf once it has seen the child exit: the survivor dies and the
// child's cgroup is removed.
func TestKillJobsOfEndsAnOrphansJobs(t *testing.T) {
	requireCgroups(t)
	marker := fmt.Sprintf("%d.%06d3", 7000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	j := newJail(t, Settings{})
	specJSON, _ := json.Marshal(j.spec)
	exe, _ := os.Executable()
	child := exec.Command(exe)
	child.Env = append(os.Environ(), childEnv+"=owner:"+string(specJSON)+"\t"+marker)
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("child: %q", line)
	}
	pid := child.Process.Pid
	child.Process.Kill()
	// Left a zombie until the end: any odek process starting meanwhile
	// (another package's tests, in a full run) sweeps the job cgroups of
	// owners that are gone, which would end the survivor before the
	// check below. A zombie's pid still answers kill(pid, 0).
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	// The owner says ready once its shell has ended, which can be before
	// the shell's background child has finished exec'ing sleep (its
	// cmdline reads empty in between): poll for it.
	n := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n = len(alive(t, marker)); n == 1 || time.Now().After(deadline) {
			break
		}
	}
	if n != 1 {
		t.Fatalf("%d survivors of the killed owner, want 1 (the route this closes)", n)
	}
	b, _ := jobCgroupBase()
	dirs := ownedBy(b, func(p int) bool { return p == pid })
	if len(dirs) != 1 {
		t.Fatalf("the owner's job cgroups: %v", dirs)
	}
	KillJobsOf(pid)
	if pids := waitGone(t, marker); len(pids) > 0 {
		t.Errorf("the killed owner's job lives on: %v", pids)
	}
	waitNoDir(t, dirs[0])
}

func TestUnescapeMountAndInCgroup(t *testing.T) {
	if got := unescapeMount(`/a\040b\011c`); got != "/a b\tc" {
		t.Errorf("unescape: %q", got)
	}
	if got := unescapeMount(`/plain\04`); got != `/plain\04` {
		t.Errorf("short escape: %q", got)
	}
	dir := filepath.Join("/sys/fs/cgroup/pids", "odek-1-2-3")
	if !inCgroup("8:pids:/odek-1-2-3\n0::/\n", dir) || inCgroup("8:pids:/odek-1-2-34\n", dir) || !inCgroup("0::/x/odek-1-2-3/sub\n", dir) {
		t.Error("inCgroup")
	}
}

func TestCgroupUnderMount(t *testing.T) {
	for _, c := range []struct {
		root, point, path, want string
		ok                      bool
	}{
		{"/", "/sys/fs/cgroup", "/system.slice/odek.service", "/sys/fs/cgroup/system.slice/odek.service", true},
		{"/", "/sys/fs/cgroup/pids", "/", "/sys/fs/cgroup/pids", true},
		{"/docker/abc", "/sys/fs/cgroup", "/docker/abc", "/sys/fs/cgroup", true},
		{"/docker/abc", "/sys/fs/cgroup", "/docker/abc/sub", "/sys/fs/cgroup/sub", true},
		{"/docker/abc", "/sys/fs/cgroup", "/docker/abcdef", "", false},
		{"/docker/abc", "/sys/fs/cgroup", "/other", "", false},
	} {
		got, ok := under(mount{root: c.root, point: c.point}, c.path)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("under(%s on %s, %s) = %q %v, want %q %v", c.root, c.point, c.path, got, ok, c.want, c.ok)
		}
	}
}
