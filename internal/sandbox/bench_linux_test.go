//go:build linux

package sandbox

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// BenchmarkJobSandbox is what confining one job costs a worker: the
// job's Spec from the process's Template and its Jail, whose thread is
// confined (ruleset built) at the job's first command (here /bin/true,
// exec and limits included), and the Jail's Close, which ends the job's
// processes.
func BenchmarkJobSandbox(b *testing.B) {
	if ABI() < RequiredABI {
		b.Skip("no Landlock")
	}
	root, tmp := b.TempDir(), b.TempDir()
	tpl := NewTemplate(Settings{}, nil, Host)
	b.ReportAllocs()
	for b.Loop() {
		spec, err := tpl.For(root, tmp)
		if err != nil {
			b.Fatal(err)
		}
		j, err := NewJail(spec)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("/bin/true")
		if err := j.Start(cmd); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		j.Close()
	}
}

// BenchmarkScopedKillAll is what ending a job adds: kill(-1) from a
// thread with Landlock's signal scoping, which walks every process of the
// machine and is refused for all but the domain's (signal 0 here, and the
// domain is empty, so nothing dies).
func BenchmarkScopedKillAll(b *testing.B) {
	if ABI() < ScopedABI {
		b.Skip("no signal scoping")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends confined
		fd, flags, err := landlock.V7.BestEffort().NewRulesetFD()
		if err != nil {
			b.Error(err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			b.Error(err)
			return
		}
		if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
			b.Error(err)
			return
		}
		for b.Loop() {
			_ = unix.Kill(-1, 0)
		}
	}()
	<-done
}
