//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// BenchmarkStartHandoff starts `sh -c true` the way a Jail does (forked
// by the job's one confined thread: a hand-off to it and back, limits off
// and on), interleaved with the way main did (a fresh thread confined
// for each call), and unconfined: the per-call price of one domain per
// job, measured in one process under the same load.
func BenchmarkStartHandoff(b *testing.B) {
	if ABI() < ScopedABI {
		b.Skip("no signal scoping")
	}
	root, tmp := b.TempDir(), b.TempDir()
	spec, err := NewSpec(Settings{}, Paths{Root: root, TempDir: tmp}, Host)
	if err != nil {
		b.Fatal(err)
	}
	limited, err := NewJail(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer limited.Close()
	bare := spec
	bare.MaxMemoryMB, bare.MaxCPUSeconds, bare.MaxProcesses, bare.MaxFileSizeMB = 0, 0, 0, 0
	plain, err := NewJail(bare)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	fd, flags, err := landlock.V7.BestEffort().NewRulesetFD(landlockRules(bare)...)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	prog, err := buildSeccompProgram(specFilter(bare))
	if err != nil {
		b.Fatal(err)
	}
	fresh := func(cmd *exec.Cmd) error { // main's way
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				errc <- err
				return
			}
			if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
				errc <- err
				return
			}
			if err := loadSeccomp(prog, 0); err != nil {
				errc <- err
				return
			}
			errc <- cmd.Start()
		}()
		return <-errc
	}
	env := Env(spec, os.Environ())
	for _, k := range []struct {
		name  string
		start func(*exec.Cmd) error
	}{
		{"unconfined", func(c *exec.Cmd) error { return c.Start() }},
		{"fresh-thread-per-call", fresh},
		{"job-thread", plain.Start},
		{"job-thread-with-limits", limited.Start},
	} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("sh", "-c", "true")
				cmd.Dir, cmd.Env = root, env
				if err := k.start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
