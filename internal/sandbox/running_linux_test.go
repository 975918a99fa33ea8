//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Jail.Running through the helper (Jail.Start): false for a new jail,
// true while a process a command left is alive, in each of two jobs.
func TestJailRunningThroughTheHelper(t *testing.T) {
	requireLandlock(t)
	j := newJail(t, Settings{})
	ma, mb := markers(t)
	for _, m := range []string{ma, mb} {
		jl, err := NewJail(j.spec)
		if err != nil {
			t.Fatal(err)
		}
		defer jl.Close()
		if jl.Running() {
			t.Fatal("a new jail reports a running process")
		}
		startIn(t, jl, j.spec, fmt.Sprintf("sleep %s >/dev/null 2>&1 &", m))
		if !jl.Running() {
			t.Error("the jail does not report the process its command left running")
		}
		jl.Close()
	}
}

// Jail.Running through the job's supervisor (Jail.Run): the supervisor
// itself, in the job's cgroup, does not count; a process a command left
// does, until it ends.
func TestJailRunningThroughTheSupervisor(t *testing.T) {
	requireCgroups(t)
	j := newJail(t, Settings{})
	jl, err := NewJail(j.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	run := func(script string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir, cmd.Env = j.spec.Root, Env(j.spec, os.Environ())
		if _, err := jl.Run(context.Background(), cmd); err != nil {
			t.Fatal(err)
		}
	}
	run("true")
	if pid, why := jl.Supervisor(); pid == 0 {
		t.Logf("no supervisor (%v): the helper path", why)
	}
	if jl.Running() {
		t.Fatal("Running with no command left running (the supervisor counted?)")
	}
	run("sleep 2 >/dev/null 2>&1 &")
	if !jl.Running() {
		t.Error("Running is false while a process the command left is alive")
	}
	for deadline := time.Now().Add(10 * time.Second); jl.Running(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Running stays true after the left process ended")
		}
	}
}
