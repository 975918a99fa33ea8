//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each job runs in a cgroup of its own in the cpu controller's hierarchy
// (cpushare_linux.go): a process a job started is in its job's cpu
// cgroup, another job's process in another's. Without it both were in
// the worker's cpu cgroup, and the scheduler shared the CPU between
// their threads, not their jobs. Jail.Running says whether a process a
// command left is alive.
func TestJailCPUShareCgroupPerJob(t *testing.T) {
	requireCgroups(t)
	if where, _ := CgroupStatus(); strings.Contains(where, "no CPU share") {
		t.Skipf("no CPU share for job cgroups here: %s", where)
	}
	j := newJail(t, Settings{})
	ma, mb := markers(t)
	var cpuDirs []string
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
		pids := alive(t, m)
		if len(pids) != 1 {
			t.Fatalf("%d processes of %s", len(pids), m)
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
		if err != nil {
			t.Fatal(err)
		}
		dir := cpuCgroupOf(string(b))
		if !strings.HasSuffix(dir, "/"+filepath.Base(jl.cg.dir)) {
			t.Errorf("the job's process is in cpu cgroup %q, want its job's (%s)\n%s", dir, filepath.Base(jl.cg.dir), b)
		}
		cpuDirs = append(cpuDirs, dir)
		jl.Close()
	}
	if cpuDirs[0] == cpuDirs[1] {
		t.Errorf("two jobs share cpu cgroup %q", cpuDirs[0])
	}
}

// cpuCgroupOf is the path of the cpu controller's cgroup in the text of
// /proc/PID/cgroup (v1's cpu line, else v2's).
func cpuCgroupOf(procCgroup string) string {
	v2 := ""
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			v2 = parts[2]
		}
		if hasWord(strings.Split(parts[1], ","), "cpu") {
			return parts[2]
		}
	}
	return v2
}

// BenchmarkJobCPUShare: how long another chat's job takes for a fixed
// CPU-bound loop while one job spins in 16 processes, with each job in a
// cpu cgroup of its own ("share") and, as before, with both in the
// worker's ("threads"); "alone" is the loop with nothing spinning.
// Figures in docs/BENCHMARKS.md.
func BenchmarkJobCPUShare(b *testing.B) {
	base, err := jobCgroupBase()
	if err != nil || base.shareV1 == "" {
		b.Skipf("no v1 cpu share hierarchy here: %v", err)
	}
	for _, mode := range []string{"alone", "share", "threads"} {
		b.Run(mode, func(b *testing.B) {
			nb := *base
			if mode == "threads" {
				nb.shareV1 = ""
			}
			mk := func(spec Spec) *Jail {
				spec.LockSession = true
				return jailWith(spec, func(l jobLimits) (*jobCgroup, error) { return nb.newJob(l) })
			}
			root, tmp := b.TempDir(), b.TempDir()
			exe, _ := os.Executable()
			spec, err := NewSpec(Settings{ReadOnlyPaths: []string{filepath.Dir(exe)}}, Paths{Root: root, TempDir: tmp}, Host)
			if err != nil {
				b.Fatal(err)
			}
			j := &jail{spec: spec}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				spin := mk(j.spec)
				for k := 0; k < 16 && mode != "alone"; k++ {
					cmd := exec.Command("sh", "-c", "while :; do :; done")
					cmd.Dir, cmd.Env = j.spec.Root, Env(j.spec, os.Environ())
					if err := spin.Start(cmd); err != nil {
						b.Fatal(err)
					}
					go func() { _ = cmd.Wait() }()
				}
				time.Sleep(200 * time.Millisecond)
				other := mk(j.spec)
				cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
				cmd.Dir, cmd.Env = j.spec.Root, Env(j.spec, os.Environ())
				b.StartTimer()
				if err := other.Start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				other.Close()
				spin.Close()
				b.StartTimer()
			}
		})
	}
}
