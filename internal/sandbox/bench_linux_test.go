//go:build linux

package sandbox

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// BenchmarkJobCgroup is what a job's own cgroup adds to a job where
// per-job cgroups work: making it (mkdir, pids.max) and, at the job's
// end, killing what is in it (nothing here) and removing it.
func BenchmarkJobCgroup(b *testing.B) {
	if _, err := CgroupStatus(); err != nil {
		b.Skipf("no per-job cgroups: %v", err)
	}
	b.ReportAllocs()
	cpu0 := selfCPU()
	for b.Loop() {
		cg, err := newJobCgroup(jobLimits{procs: DefaultMaxProcesses, memBytes: DefaultJobMemoryMB << 20})
		if err != nil {
			b.Fatal(err)
		}
		cg.remove()
	}
	// The work is the kernel's, in this process's system calls: its CPU
	// time, which a loaded machine disturbs less than wall time.
	b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// selfCPU is this process's user and system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJoinCgroup is what the helper adds to every command: writing
// its pid into the job's cgroup.procs (here the test process moves in and
// back out, two writes, so the per-call figure is about half).
func BenchmarkJoinCgroup(b *testing.B) {
	base, err := jobCgroupBase()
	if err != nil {
		b.Skipf("no per-job cgroups: %v", err)
	}
	cg, err := newJobCgroup(jobLimits{procs: DefaultMaxProcesses, memBytes: DefaultJobMemoryMB << 20})
	if err != nil {
		b.Fatal(err)
	}
	back := base.dir
	if base.v2 {
		back = filepath.Join(base.dir, leafName)
	}
	defer func() { joinCgroup(back); cg.remove() }()
	for b.Loop() {
		if err := joinCgroup(cg.dir); err != nil {
			b.Fatal(err)
		}
		if err := joinCgroup(back); err != nil {
			b.Fatal(err)
		}
	}
}
