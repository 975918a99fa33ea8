//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// What each part of the supervisor's confinement costs a command it
// starts (issue 21, round 4: the supervisor's ~0.6 ms per `sh -c true`
// over an unconfined call). A child of this test binary confines itself
// one way — nothing, Landlock only, the seccomp filter only, both, both
// with the spec's rlimits (what the supervisor does) — then fork/execs
// `sh -c true` b.N times from its confined thread, as the supervisor
// does, and reports the commands' CPU (RUSAGE_CHILDREN) and its own.
// Test-only: the knobs exist in this file, never in a built binary.
//
//	sudo go test -run '^$' -bench BenchmarkConfinedShell -benchtime 400x ./internal/sandbox
func BenchmarkConfinedShell(b *testing.B) {
	requireLandlockB(b)
	dir := b.TempDir()
	root, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "tmp")
	if err := os.Mkdir(root, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		b.Fatal(err)
	}
	spec, err := NewSpec(Settings{}, Paths{Root: root, TempDir: tmp}, Host)
	if err != nil {
		b.Fatal(err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	// The last: the supervisor's confinement and runtime setting (one
	// P), each command 100 ms after the last, asleep in a system call
	// between them, as a job's supervisor waits for its calls (run it
	// with a smaller -benchtime).
	for _, mode := range []string{"none", "landlock", "seccomp", "both", "both+rlimits", "both+rlimits,100ms-apart"} {
		b.Run(mode, func(b *testing.B) {
			cmd := exec.Command(self)
			cmd.Dir = root
			cmd.Env = append(Env(spec, os.Environ()), childEnv+"=shloop:"+mode+"\t"+strconv.Itoa(b.N)+"\t"+string(js))
			if strings.HasSuffix(mode, "-apart") {
				cmd.Env = append(cmd.Env, "GOMAXPROCS=1")
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			var children, own int64
			if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "children %d own %d", &children, &own); err != nil {
				b.Fatalf("%q: %v", out, err)
			}
			b.ReportMetric(float64(children)/float64(b.N), "sh-cpu-ns/op")
			b.ReportMetric(float64(own)/float64(b.N), "parent-cpu-ns/op")
		})
	}
}

func requireLandlockB(b *testing.B) {
	if abi := ABI(); abi < RequiredABI {
		b.Skipf("Landlock ABI %d < %d", abi, RequiredABI)
	}
}

// shLoop is the child of BenchmarkConfinedShell: arg is the mode, a
// tab, the count, a tab, the spec's JSON.
func shLoop(arg string) int {
	parts := strings.SplitN(arg, "\t", 3)
	if len(parts) != 3 {
		fmt.Println("error: bad shloop argument")
		return 2
	}
	mode, apart, _ := strings.Cut(parts[0], ",")
	pause := unix.Timespec{}
	if apart != "" {
		d, err := time.ParseDuration(strings.TrimSuffix(apart, "-apart"))
		if err != nil {
			fmt.Println("error:", err)
			return 2
		}
		pause = unix.NsecToTimespec(d.Nanoseconds())
	}
	n, _ := strconv.Atoi(parts[1])
	var spec Spec
	if err := json.Unmarshal([]byte(parts[2]), &spec); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	runtime.LockOSThread()
	opts := specFilter(spec)
	opts.ownGroup = true
	var err error
	switch mode {
	case "none":
	case "landlock":
		err = restrictThread(spec, ABI())
	case "seccomp":
		if err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err == nil {
			err = installSeccomp(opts, unix.SECCOMP_FILTER_FLAG_TSYNC)
		}
	case "both":
		err = enforceWith(spec, opts)
	case "both+rlimits":
		if err = enforceWith(spec, opts); err == nil {
			err = setLimits(spec)
		}
	default:
		err = fmt.Errorf("mode %q", mode)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	env := os.Environ()
	fds := []uintptr{null.Fd(), null.Fd(), null.Fd()}
	rusage := func(who int) int64 {
		var ru unix.Rusage
		_ = unix.Getrusage(who, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	c0, s0 := rusage(unix.RUSAGE_CHILDREN), rusage(unix.RUSAGE_SELF)
	for i := 0; i < n; i++ {
		if apart != "" {
			_ = unix.Nanosleep(&pause, nil)
		}
		pid, err := syscall.ForkExec(sh, []string{"sh", "-c", "true"}, &syscall.ProcAttr{Env: env, Files: fds, Sys: &syscall.SysProcAttr{Setpgid: true}})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		var ws unix.WaitStatus
		for {
			_, err = unix.Wait4(pid, &ws, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil || ws.ExitStatus() != 0 {
			fmt.Println("error: sh:", err, ws.ExitStatus())
			return 1
		}
	}
	fmt.Printf("children %d own %d\n", rusage(unix.RUSAGE_CHILDREN)-c0, rusage(unix.RUSAGE_SELF)-s0)
	return 0
}

// BenchmarkSupervisorCall is one `sh -c true` through a running job
// supervisor (Jail.Run), split by process: the job's cgroup's CPU per
// call (the supervisor and the command), the supervisor's own (the sum
// of its threads' run time, /proc/<pid>/task/*/schedstat), its context
// switches and threads; the command's share is the difference.
//
//	sudo go test -run '^$' -bench 'BenchmarkSupervisorCall/back' -benchtime 1000x ./internal/sandbox
//	sudo go test -run '^$' -bench 'BenchmarkSupervisorCall/100ms' -benchtime 100x ./internal/sandbox
//
// ODEK_BENCH_HELPER names the supervisor binary (see benchHelper).
func BenchmarkSupervisorCall(b *testing.B) {
	requireLandlockB(b)
	if os.Geteuid() != 0 {
		b.Skip("per-job cgroups need root")
	}
	dir := b.TempDir()
	root, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "tmp")
	_ = os.Mkdir(root, 0o700)
	_ = os.Mkdir(tmp, 0o700)
	spec, err := NewSpec(Settings{}, Paths{Root: root, TempDir: tmp}, Host)
	if err != nil {
		b.Fatal(err)
	}
	defer benchHelper(b)()
	jl, err := NewJail(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer jl.Close()
	env := Env(spec, os.Environ())
	call := func() {
		cmd := exec.Command("sh", "-c", "true")
		cmd.Dir, cmd.Env = root, env
		ws, err := jl.Run(context.Background(), cmd)
		if err != nil || ws.ExitStatus() != 0 {
			b.Fatalf("%v %d", err, ws.ExitStatus())
		}
	}
	for i := 0; i < 5; i++ {
		call()
	}
	pid, why := jl.Supervisor()
	if pid == 0 {
		b.Fatalf("no supervisor: %v", why)
	}
	// Back to back, and each call 100 ms after the last, as a job's
	// calls come (the pause is outside the timer, and costs the
	// supervisor only what its threads do while it waits).
	for _, apart := range []time.Duration{0, 100 * time.Millisecond} {
		name := "back-to-back"
		if apart > 0 {
			name = apart.String() + "-apart"
		}
		b.Run(name, func(b *testing.B) {
			job0 := cgroupCPU(jl.Spec())
			sup0, cs0 := procCPU(pid)
			self0 := selfCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if apart > 0 {
					b.StopTimer()
					time.Sleep(apart)
					b.StartTimer()
				}
				call()
			}
			b.StopTimer()
			sup1, cs1 := procCPU(pid)
			job := cgroupCPU(jl.Spec()) - job0
			n := float64(b.N)
			b.ReportMetric(float64(job)/n, "job-cpu-ns/op")
			b.ReportMetric(float64(sup1-sup0)/n, "sup-cpu-ns/op")
			b.ReportMetric(float64(job-(sup1-sup0))/n, "cmd-cpu-ns/op")
			b.ReportMetric(float64(int64(selfCPU()-self0))/n, "caller-cpu-ns/op")
			b.ReportMetric(float64(cs1-cs0)/n, "sup-ctxsw/op")
			tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
			b.ReportMetric(float64(len(tasks)), "sup-threads")
		})
	}
}

// benchHelper makes ODEK_BENCH_HELPER, when set, the helper and
// supervisor binary (the lean cmd/odek-sandbox built with
// CGO_ENABLED=0, as a worker runs it, rather than this test binary);
// the returned func undoes it. A test-only knob.
func benchHelper(b *testing.B) func() {
	h := os.Getenv("ODEK_BENCH_HELPER")
	if h == "" {
		return func() {}
	}
	if _, err := executable(); err != nil {
		b.Fatal(err)
	}
	saved := exePath
	exePath = h
	return func() { exePath = saved }
}

// procCPU is the run time (ns) and context switches of pid's threads.
func procCPU(pid int) (ns, switches int64) {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name())); err == nil {
			var run int64
			fmt.Sscan(string(b), &run)
			ns += run
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name())); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
					k, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					switches += k
				}
				if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
					k, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					switches += k
				}
			}
		}
	}
	return ns, switches
}

// cgroupCPU is the CPU (ns) of the job's cgroup, 0 where unreadable.
func cgroupCPU(spec Spec) int64 {
	for _, d := range spec.CgroupsV1 {
		if b, err := os.ReadFile(filepath.Join(d, "cpuacct.usage")); err == nil {
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	if b, err := os.ReadFile(filepath.Join(spec.Cgroup, "cpu.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n * 1000
			}
		}
	}
	return 0
}

// BenchmarkJobOfOneCall is a job of one `sh -c true`, its start and end
// included, three ways in turn each round: through the helper (Jail.Start,
// what every job paid before the supervisor), through the job's
// supervisor (Jail.Run, its start and end), and, as the machine's
// baseline, the exec of an empty Go binary. cpu-ns/op of each is this
// process's CPU and its reaped children's (the supervisor is reaped by
// Close, its command by the supervisor, so both count).
//
// The helper and supervisor binary is this test binary unless
// ODEK_BENCH_HELPER names another (the lean cmd/odek-sandbox, as a worker
// runs it); ODEK_BENCH_EMPTY names the empty Go binary (default: built
// into a temporary directory). Test-only knobs.
//
//	sudo go test -run '^$' -bench BenchmarkJobOfOneCall -benchtime 200x ./internal/sandbox
func BenchmarkJobOfOneCall(b *testing.B) {
	requireLandlockB(b)
	if os.Geteuid() != 0 {
		b.Skip("per-job cgroups need root")
	}
	defer benchHelper(b)()
	dir := b.TempDir()
	empty := os.Getenv("ODEK_BENCH_EMPTY")
	if empty == "" {
		empty = filepath.Join(dir, "empty")
		src := filepath.Join(dir, "empty.go")
		if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		build := exec.Command("go", "build", "-o", empty, src)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	root, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "tmp")
	_ = os.Mkdir(root, 0o700)
	_ = os.Mkdir(tmp, 0o700)
	spec, err := NewSpec(Settings{}, Paths{Root: root, TempDir: tmp}, Host)
	if err != nil {
		b.Fatal(err)
	}
	env := Env(spec, os.Environ())
	sh := func() *exec.Cmd {
		cmd := exec.Command("sh", "-c", "true")
		cmd.Dir, cmd.Env = root, env
		return cmd
	}
	kinds := []struct {
		name string
		job  func() error
	}{
		{"helper", func() error {
			jl, err := NewJail(spec)
			if err != nil {
				return err
			}
			defer jl.Close()
			cmd := sh()
			if err := jl.Start(cmd); err != nil {
				return err
			}
			return cmd.Wait()
		}},
		{"supervisor", func() error {
			jl, err := NewJail(spec)
			if err != nil {
				return err
			}
			ws, err := jl.Run(context.Background(), sh())
			pid, why := jl.Supervisor()
			jl.Close() // kills the supervisor and waits for it to be reaped
			switch {
			case err != nil:
				return err
			case ws.ExitStatus() != 0:
				return fmt.Errorf("status %v", ws)
			case pid == 0:
				return fmt.Errorf("no supervisor: %v", why)
			}
			return nil
		}},
		{"empty-go", func() error { return exec.Command(empty).Run() }},
	}
	cpu, own := make([]int64, len(kinds)), make([]int64, len(kinds))
	all := func() int64 {
		var self, children unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_SELF, &self)
		_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &children)
		return self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano()
	}
	for i := 0; i < 3; i++ { // warm-up
		for _, k := range kinds {
			if err := k.job(); err != nil {
				b.Fatalf("%s: %v", k.name, err)
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, kd := range kinds {
			c0, s0 := all(), selfCPU()
			if err := kd.job(); err != nil {
				b.Fatalf("%s: %v", kd.name, err)
			}
			cpu[k] += all() - c0
			own[k] += int64(selfCPU() - s0)
		}
	}
	b.StopTimer()
	for k, kd := range kinds {
		b.ReportMetric(float64(cpu[k])/float64(b.N), kd.name+"-cpu-ns/op")
		b.ReportMetric(float64(own[k])/float64(b.N), kd.name+"-caller-cpu-ns/op")
	}
	b.ReportMetric(float64(cpu[1]-cpu[0])/float64(b.N), "added-cpu-ns/op")
}
