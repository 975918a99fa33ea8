//go:build linux

// Command sandboxbench measures what the sandbox adds to one shell call
// and to one job, the way a worker does it, against a plain `sh -c true`:
//
//   - a call: `sh -c true` started by the job's sandbox.Jail, with the
//     default settings (resource limits on) and with the limits taken out
//     of the spec;
//   - a job: a new Jail, its first `sh -c true`, and the Jail's Close
//     (which ends the job's processes);
//   - the re-executed helper (`odek __odek-sandbox-exec <spec> sh -c
//     true`: the odek binary's start-up, the limits, the ruleset, the
//     filter, then exec);
//   - the lean helper (`odek-sandbox __odek-sandbox-exec …`, cmd/odek-sandbox,
//     which odek re-executes instead of itself when it sits beside it),
//     when this tree has one;
//   - the job's supervisor (Jail.Run, issue 21 round 4), where this tree
//     has one and jobs get cgroups: a call through a running supervisor,
//     and a job of one call (its supervisor's start and end included);
//     their CPU is read from the job's cgroup (the supervisor's commands
//     are not this process's children);
//   - and, as this machine's baseline, the exec of an empty Go binary.
//
// All run interleaved, -n times each; it prints the median and the 90th
// percentile of each and the medians added per call and per job. The
// program uses only API that main has too, so the same file builds
// against an older tree for an interleaved comparison (docs/BENCHMARKS.md).
//
//	sudo go run ./bench/sandboxbench -n 200   (root: per-job cgroups)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/odekrun/odek/internal/sandbox"
)

func main() {
	sandbox.Main() // a Jail may re-execute this binary as its helper
	n := flag.Int("n", 200, "calls of each kind")
	odekBin := flag.String("odek", "", "the odek binary for the helper rows (default: build this tree's)")
	leanBin := flag.String("lean", "", "the odek-sandbox binary for the lean helper row (default: build this tree's, if it has one)")
	apart := flag.Duration("apart", 0, "a pause before each call, as a job's calls come seconds apart (0: back to back)")
	flag.Parse()
	if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
		fmt.Fprintf(os.Stderr, "Landlock ABI %d < %d: nothing to measure\n", abi, sandbox.RequiredABI)
		os.Exit(1)
	}
	dir := os.Getenv(reexecEnv)
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "sandboxbench-")
		check(err)
	}
	defer os.RemoveAll(dir)
	odek := *odekBin
	if odek == "" {
		odek = filepath.Join(dir, "odek")
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", odek, "github.com/odekrun/odek/cmd/odek")
		build.Stderr, build.Env = os.Stderr, append(os.Environ(), "CGO_ENABLED=0") // as the image builds it
		check(build.Run())
	}
	lean := *leanBin
	if lean == "" {
		if _, err := os.Stat("cmd/odek-sandbox"); err == nil {
			lean = filepath.Join(dir, "odek-sandbox")
			build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", lean, "./cmd/odek-sandbox")
			build.Stderr, build.Env = os.Stderr, append(os.Environ(), "CGO_ENABLED=0")
			check(build.Run())
		}
	}
	if lean != "" && os.Getenv(reexecEnv) == "" {
		// The Jails re-execute this binary as their helper and
		// supervisor unless odek-sandbox sits beside it, as it does
		// beside odek in the image: run again from dir, beside lean.
		self, err := os.Executable()
		check(err)
		b, err := os.ReadFile(self)
		check(err)
		me := filepath.Join(dir, "sandboxbench")
		check(os.WriteFile(me, b, 0o755))
		if filepath.Dir(lean) != dir {
			b, err := os.ReadFile(lean)
			check(err)
			lean = filepath.Join(dir, sandbox.LeanHelper)
			check(os.WriteFile(lean, b, 0o755))
		}
		args := []string{me, "-n", strconv.Itoa(*n), "-odek", odek, "-lean", lean, "-apart", apart.String()}
		check(syscall.Exec(me, args, append(os.Environ(), reexecEnv+"="+dir)))
	}
	if h, err := sandbox.Helper(); err == nil {
		fmt.Printf("the Jails' helper and supervisor binary: %s\n", h)
	}
	empty := filepath.Join(dir, "empty")
	check(os.WriteFile(filepath.Join(dir, "empty.go"), []byte("package main\nfunc main() {}\n"), 0o600))
	eb := exec.Command("go", "build", "-o", empty, filepath.Join(dir, "empty.go"))
	eb.Stderr = os.Stderr
	check(eb.Run())

	root, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "tmp")
	check(os.Mkdir(root, 0o700))
	check(os.Mkdir(tmp, 0o700))
	spec, err := sandbox.NewSpec(sandbox.Settings{}, sandbox.Paths{Root: root, TempDir: tmp}, sandbox.Host)
	check(err)
	specJSON := mustJSON(spec)
	env := sandbox.Env(spec, os.Environ())

	jail, err := sandbox.NewJail(spec)
	check(err)
	defer jail.Close()
	noLimits := withoutLimits(spec)
	plainJail, err := sandbox.NewJail(noLimits)
	check(err)
	defer plainJail.Close()
	newJob := func() *sandbox.Jail {
		j, err := sandbox.NewJail(spec)
		check(err)
		return j
	}
	type kind struct {
		name string
		argv []string
		jail func() *sandbox.Jail
		job  bool // a new Jail for this call, closed after it
		run  bool // through Jail.Run (the job's supervisor), not Start
	}
	kinds := []kind{
		{"sh -c true (unsandboxed)", []string{"sh", "-c", "true"}, nil, false, false},
		{"sh -c true in a Jail", []string{"sh", "-c", "true"}, func() *sandbox.Jail { return jail }, false, false},
		{"  the same, limits off", []string{"sh", "-c", "true"}, func() *sandbox.Jail { return plainJail }, false, false},
		{"a job: Jail, sh -c true, Close", []string{"sh", "-c", "true"}, newJob, true, false},
		{"sh -c true via the helper", []string{odek, sandbox.HelperArg, specJSON, "sh", "-c", "true"}, nil, false, false},
		{"empty Go binary (baseline)", []string{empty}, nil, false, false},
	}
	if lean != "" {
		kinds = append(kinds, kind{name: "sh -c true via the lean helper", argv: []string{lean, sandbox.HelperArg, specJSON, "sh", "-c", "true"}})
	}
	// The job's supervisor (issue 21, round 4), where this tree has one
	// (Jail.Run) and jobs get cgroups: one Jail serving every call, and
	// a job of one call (the supervisor's start included).
	supJail, supOK := runner(jail)
	firstSup := len(kinds)
	if supOK {
		kinds = append(kinds,
			kind{name: "sh -c true via the supervisor", argv: []string{"sh", "-c", "true"}, jail: func() *sandbox.Jail { return jail }, run: true},
			kind{name: "a job via the supervisor", argv: []string{"sh", "-c", "true"}, jail: newJob, job: true, run: true})
	}
	times := make([][]time.Duration, len(kinds))
	// CPU time, which a loaded machine disturbs far less than wall time:
	// this process's (the Jail's thread included) and its children's.
	cpuSelf := make([]time.Duration, len(kinds))
	cpuChildren := make([]time.Duration, len(kinds))
	for i := 0; i < *n+5; i++ {
		for k, kd := range kinds {
			cmd := exec.Command(kd.argv[0], kd.argv[1:]...)
			cmd.Dir, cmd.Env = root, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if *apart > 0 {
				time.Sleep(*apart)
			}
			self0, children0 := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
			start := time.Now()
			var elapsed, job time.Duration
			switch {
			case kd.run:
				// The supervisor and its commands are not this process's
				// children until the supervisor is reaped: their CPU is
				// read from the job's cgroup (and, for a job, the rest
				// once the closed job's supervisor is reaped).
				j := kd.jail()
				job0 := jobCPU(j)
				var ws syscall.WaitStatus
				ws, err = supJail(j).Run(context.Background(), cmd)
				if err == nil && ws.ExitStatus() != 0 {
					err = fmt.Errorf("exit status %d", ws.ExitStatus())
				}
				if pid, why := supervisorOf(j); pid == 0 {
					err = fmt.Errorf("no supervisor: %v", why)
				} else if kd.job {
					j.Close()
					elapsed = time.Since(start)
					waitReaped(pid)
				} else {
					job = jobCPU(j) - job0
				}
			case kd.jail != nil:
				j := kd.jail()
				err = j.Start(cmd)
				if err == nil {
					err = cmd.Wait()
				}
				if kd.job {
					j.Close()
				}
			default:
				err = cmd.Run()
			}
			if elapsed == 0 {
				elapsed = time.Since(start)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", kd.name, err, out.String())
				os.Exit(1)
			}
			if i >= 5 { // warm-up
				times[k] = append(times[k], elapsed)
				cpuSelf[k] += cpu(syscall.RUSAGE_SELF) - self0
				cpuChildren[k] += cpu(syscall.RUSAGE_CHILDREN) - children0 + job
			}
		}
	}
	med := make([]time.Duration, len(kinds))
	for k, kd := range kinds {
		slices.Sort(times[k])
		med[k] = times[k][len(times[k])/2]
		fmt.Printf("%-32s median %7.3f ms  p90 %7.3f ms  CPU per call: this process %6.3f ms, children %6.3f ms  (n=%d)\n",
			kd.name, ms(med[k]), ms(times[k][len(times[k])*9/10]), ms(cpuSelf[k]/time.Duration(*n)), ms(cpuChildren[k]/time.Duration(*n)), len(times[k]))
	}
	fmt.Printf("added by the sandbox (medians): %.3f ms per call in a Jail (%.3f ms with its limits off), %.3f ms per job beyond its first call, %.3f ms through the helper; an empty Go binary's exec costs %.3f ms here\n",
		ms(med[1]-med[0]), ms(med[2]-med[0]), ms(med[3]-med[1]), ms(med[4]-med[0]), ms(med[5]))
	if supOK {
		per := func(k int) float64 { return ms((cpuSelf[k] + cpuChildren[k]) / time.Duration(*n)) }
		fmt.Printf("CPU per call, this process + the job's processes: unconfined %.3f ms, supervisor %.3f ms (%.2fx), helper per call (Jail.Start) %.3f ms (%.2fx), empty Go binary %.3f ms; a job of one call via the supervisor %.3f ms (via the helper %.3f ms)\n",
			per(0), per(firstSup), per(firstSup)/per(0), per(1), per(1)/per(0), per(5), per(firstSup+1), per(3))
		fmt.Printf("wall medians: the supervisor adds %.3f ms per call to sh -c true (the helper per call %.3f ms)\n", ms(med[firstSup]-med[0]), ms(med[1]-med[0]))
	}
	if lean != "" {
		fmt.Printf("the lean helper adds %.3f ms per call (odek as the helper: %.3f ms); its CPU per call, children: %.3f ms against odek's %.3f ms\n",
			ms(med[6]-med[0]), ms(med[4]-med[0]), ms(cpuChildren[6]/time.Duration(*n)), ms(cpuChildren[4]/time.Duration(*n)))
	}
}

// cpu is the user and system time of who (RUSAGE_SELF or
// RUSAGE_CHILDREN, the children waited for).
func cpu(who int) time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(who, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// withoutLimits is spec with every resource limit taken out (through
// JSON, so that this file builds against trees with other limit fields).
func withoutLimits(s sandbox.Spec) sandbox.Spec {
	var m map[string]any
	check(json.Unmarshal([]byte(mustJSON(s)), &m))
	for k := range m {
		if strings.HasPrefix(k, "max_") {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	check(err)
	var out sandbox.Spec
	check(json.Unmarshal(b, &out))
	return out
}

func mustJSON(s sandbox.Spec) string {
	b, err := json.Marshal(s)
	check(err)
	return string(b)
}

// reexecEnv names the directory of a run re-executed beside the lean
// helper.
const reexecEnv = "SANDBOXBENCH_DIR"

// runJail is Jail.Run, which older trees lack: this file builds against
// them (the supervisor rows are left out there).
type runJail interface {
	Run(context.Context, *exec.Cmd) (syscall.WaitStatus, error)
	Supervisor() (int, error)
}

// runner reports whether j has Run and a supervisor can serve it.
func runner(j *sandbox.Jail) (func(*sandbox.Jail) runJail, bool) {
	r, ok := any(j).(runJail)
	if !ok {
		return nil, false
	}
	cmd := exec.Command("true")
	if _, err := r.Run(context.Background(), cmd); err != nil {
		return nil, false
	}
	if pid, why := r.Supervisor(); pid == 0 {
		fmt.Fprintf(os.Stderr, "no supervisor rows: %v\n", why)
		return nil, false
	}
	return func(j *sandbox.Jail) runJail { return any(j).(runJail) }, true
}

func supervisorOf(j *sandbox.Jail) (int, error) { return any(j).(runJail).Supervisor() }

// jobCPU is the CPU time the processes in j's cgroup have used (cgroup
// v1 cpuacct.usage, v2 cpu.stat), 0 where it cannot be read.
func jobCPU(j *sandbox.Jail) time.Duration {
	spec := j.Spec()
	for _, d := range spec.CgroupsV1 {
		if b, err := os.ReadFile(filepath.Join(d, "cpuacct.usage")); err == nil {
			var n int64
			fmt.Sscan(strings.TrimSpace(string(b)), &n)
			return time.Duration(n)
		}
	}
	if b, err := os.ReadFile(filepath.Join(spec.Cgroup, "cpu.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				var n int64
				fmt.Sscan(v, &n)
				return time.Duration(n) * time.Microsecond
			}
		}
	}
	return 0
}

// waitReaped waits until pid is gone, zombie included: a closed job's
// supervisor, whose CPU (its commands' included) then counts among this
// process's children.
func waitReaped(pid int) {
	for i := 0; i < 5000 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(time.Millisecond)
	}
}
