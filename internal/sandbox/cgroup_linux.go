//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Per-job cgroups: the bound on a job's processes that holds for root.
//
// RLIMIT_NPROC counts processes per user and the kernel does not apply it
// to root, so a worker running as root could not stop a fork bomb. Where
// this process can create cgroups with the pids controller, every Jail
// gets a cgroup of its own: pids.max is the spec's MaxProcesses for the
// job as a whole (every process and thread of it), the helper moves
// itself into it before it confines itself (a process of the job cannot
// leave it: it has no capabilities and Landlock denies it /sys), and
// Close kills every process in it — cgroup.kill on cgroup v2, and on v1
// each member through a pidfd opened, then checked to be still a member,
// then signalled, so a reused pid is never hit — and removes it. The
// cgroups are named odek-<pid namespace>-<owner pid>-<n>, so a process that sees one of
// its children die (a SIGKILLed `odek subagent`) ends the jobs the child
// left (KillJobsOf), and a process that starts removes those of owners
// that are gone.
//
// Which hierarchy: cgroup v2 when its pids controller is available to
// this process's cgroup (delegated, or root), else cgroup v1's pids
// hierarchy. On v2 a cgroup with processes cannot hand controllers to
// its children, so the processes of this process's cgroup — when they
// are only this process and its parent (a container's init) — move into
// a leaf, odek-leaf, first (what a container with a delegated cgroup
// expects); the job cgroups are its siblings. Without either, jobs fall
// back to RLIMIT_NPROC, which binds every user but root (CgroupStatus
// says which; a worker running as root then warns at start).

// cgroupBase is where this process makes its jobs' cgroups.
type cgroupBase struct {
	dir string
	v2  bool
	// memory and cpu report whether a job cgroup in dir (v2) has
	// memory.max and cpu.stat.
	memory, cpu bool
	// memV1 and cpuV1 are where job cgroups are made in cgroup v1's
	// memory and cpuacct hierarchies, beside a v1 pids base ("" ⇒ none).
	memV1, cpuV1 string
}

// Memory and CPU: beside pids.max, a job's cgroup carries its memory
// limit (v2 memory.max; v1 memory.limit_in_bytes in the memory
// hierarchy, a cgroup of the same name) and is where the Jail reads the
// CPU time the job used (v2 cpu.stat, which every v2 cgroup has; v1
// cpuacct.usage in the cpuacct hierarchy). A hierarchy that lacks one
// leaves that limit unenforced, which CgroupStatus says.

var (
	cgroupOnce sync.Once
	cgroupHier *cgroupBase
	cgroupErr  error
	cgroupSeq  atomic.Int64
)

// CgroupStatus reports whether jobs get a cgroup of their own ("" when
// not), and where: "v2 <dir>" or "v1 <dir>"; err says why not.
func CgroupStatus() (string, error) {
	b, err := jobCgroupBase()
	if err != nil {
		return "", err
	}
	var s string
	if b.v2 {
		s = "v2 " + b.dir
	} else {
		s = "v1 " + b.dir
	}
	switch {
	case b.memV1 != "":
		s += ", memory (v1) " + b.memV1
	case b.memory:
		s += ", memory"
	default:
		s += ", no memory controller (job_memory_mb not enforced)"
	}
	switch {
	case b.cpuV1 != "":
		s += ", cpuacct (v1) " + b.cpuV1
	case b.cpu:
		s += ", cpu.stat"
	default:
		s += ", no CPU accounting (job_cpu_seconds not enforced)"
	}
	return s, nil
}

func jobCgroupBase() (*cgroupBase, error) {
	cgroupOnce.Do(func() {
		cgroupHier, cgroupErr = findCgroupBase()
		if cgroupErr == nil {
			sweepOrphans(cgroupHier)
		}
	})
	return cgroupHier, cgroupErr
}

// mount is one line of /proc/self/mountinfo that matters here.
type mount struct {
	root, point, fstype string
	opts                []string
}

func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		out = append(out, mount{root: unescapeMount(a[3]), point: unescapeMount(a[4]), fstype: b[0], opts: strings.Split(b[2], ",")})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups maps each hierarchy line of /proc/self/cgroup to its path:
// "" for v2, the controller list for v1.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			out[parts[1]] = parts[2]
		}
	}
	return out, nil
}

// under is the directory of cgroup path p in a mount whose root is root.
func under(m mount, p string) (string, bool) {
	rel := p
	if m.root != "/" {
		r, ok := strings.CutPrefix(p, m.root)
		if !ok || (r != "" && !strings.HasPrefix(r, "/")) {
			return "", false
		}
		rel = r
	}
	return filepath.Join(m.point, rel), true
}

const leafName = "odek-leaf"

func findCgroupBase() (*cgroupBase, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %v", err)
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %v", err)
	}
	var reasons []string
	if p, ok := own[""]; ok {
		for _, m := range mounts {
			if m.fstype != "cgroup2" {
				continue
			}
			dir, ok := under(m, p)
			if !ok {
				continue
			}
			b, err := v2Base(dir)
			if err == nil {
				return b, nil
			}
			reasons = append(reasons, "cgroup v2: "+err.Error())
			break
		}
	}
	for ctrls, p := range own {
		if !hasWord(strings.Split(ctrls, ","), "pids") {
			continue
		}
		for _, m := range mounts {
			if m.fstype != "cgroup" || !hasWord(m.opts, "pids") {
				continue
			}
			dir, ok := under(m, p)
			if !ok {
				continue
			}
			if err := probeDir(dir, "pids.max"); err != nil {
				reasons = append(reasons, "cgroup v1 pids: "+err.Error())
				break
			}
			b := &cgroupBase{dir: dir}
			b.memV1 = v1Hierarchy(mounts, own, "memory", "memory.limit_in_bytes")
			b.cpuV1 = v1Hierarchy(mounts, own, "cpuacct", "cpuacct.usage")
			return b, nil
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "no cgroup hierarchy with the pids controller")
	}
	return nil, errors.New(strings.Join(reasons, "; "))
}

// v1Hierarchy is this process's cgroup in the v1 hierarchy of controller
// when a job cgroup with file can be made in it, else "".
func v1Hierarchy(mounts []mount, own map[string]string, controller, file string) string {
	for ctrls, p := range own {
		if !hasWord(strings.Split(ctrls, ","), controller) {
			continue
		}
		for _, m := range mounts {
			if m.fstype != "cgroup" || !hasWord(m.opts, controller) {
				continue
			}
			if dir, ok := under(m, p); ok && probeDir(dir, file) == nil {
				return dir
			}
		}
	}
	return ""
}

func hasWord(list []string, w string) bool {
	for _, x := range list {
		if x == w {
			return true
		}
	}
	return false
}

// probeDir checks that a job cgroup with each of files can be made in
// dir.
func probeDir(dir string, files ...string) error {
	_, err := probeFiles(dir, files...)
	return err
}

// probeFiles makes a job cgroup in dir and reports which of files it
// has; the error says why none could be made, or names the first file
// missing.
func probeFiles(dir string, files ...string) (map[string]bool, error) {
	p := filepath.Join(dir, fmt.Sprintf("odek-probe-%d", os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil, err
	}
	defer os.Remove(p)
	has := map[string]bool{}
	var missing error
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(p, f)); err == nil {
			has[f] = true
		} else if missing == nil {
			missing = fmt.Errorf("no %s in a new cgroup: %v", f, err)
		}
	}
	return has, missing
}

// v2Base prepares dir, this process's v2 cgroup (or the leaf odek made
// in its parent), to hold job cgroups with the pids controller.
func v2Base(dir string) (*cgroupBase, error) {
	if filepath.Base(dir) == leafName {
		// A child of a process that prepared the parent already.
		dir = filepath.Dir(dir)
	}
	ctrls, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	if !hasWord(strings.Fields(string(ctrls)), "pids") {
		return nil, errors.New("the pids controller is not available to " + dir)
	}
	sub := filepath.Join(dir, "cgroup.subtree_control")
	if cur, _ := os.ReadFile(sub); !hasWord(strings.Fields(string(cur)), "pids") {
		if err := os.WriteFile(sub, []byte("+pids"), 0); err != nil {
			if !errors.Is(err, unix.EBUSY) {
				return nil, fmt.Errorf("enable pids: %v", err)
			}
			// Processes live in dir: move them into a leaf — only when
			// they are this process and its parent (a container's init, a
			// service of its own), never someone else's (a login
			// session's processes, for `odek run --confine` as root).
			procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				return nil, err
			}
			for _, pid := range strings.Fields(string(procs)) {
				if pid != strconv.Itoa(os.Getpid()) && pid != strconv.Itoa(os.Getppid()) {
					return nil, fmt.Errorf("%s holds processes other than odek and its parent (pid %s); give odek a cgroup of its own", dir, pid)
				}
			}
			leaf := filepath.Join(dir, leafName)
			if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, err
			}
			for _, pid := range strings.Fields(string(procs)) {
				_ = os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0)
			}
			if err := os.WriteFile(sub, []byte("+pids"), 0); err != nil {
				return nil, fmt.Errorf("enable pids after moving the processes into %s: %v", leaf, err)
			}
		}
	}
	// Memory is wanted, not required: without it pids still bound a job.
	if cur, _ := os.ReadFile(sub); hasWord(strings.Fields(string(ctrls)), "memory") && !hasWord(strings.Fields(string(cur)), "memory") {
		_ = os.WriteFile(sub, []byte("+memory"), 0)
	}
	has, err := probeFiles(dir, "pids.max", "memory.max", "cpu.stat")
	if !has["pids.max"] {
		return nil, err
	}
	return &cgroupBase{dir: dir, v2: true, memory: has["memory.max"], cpu: has["cpu.stat"]}, nil
}

// jobCgroup is one job's cgroup.
type jobCgroup struct {
	base *cgroupBase
	dir  string
	// v1 are its cgroups of the same name in the other v1 hierarchies
	// (memory, cpuacct) that exist.
	v1 []string
}

// jobOf is the job cgroup named like dir (in b.dir), with its v1
// companions.
func (b *cgroupBase) jobOf(dir string) *jobCgroup {
	cg := &jobCgroup{base: b, dir: dir}
	for _, h := range []string{b.memV1, b.cpuV1} {
		if h != "" {
			cg.v1 = append(cg.v1, filepath.Join(h, filepath.Base(dir)))
		}
	}
	return cg
}

// jobLimits are what a job cgroup bounds; 0 ⇒ no bound.
type jobLimits struct {
	procs    int
	memBytes int64
}

// newJobCgroup makes a job cgroup in this process's base.
func newJobCgroup(l jobLimits) (*jobCgroup, error) {
	b, err := jobCgroupBase()
	if err != nil {
		return nil, err
	}
	return b.newJob(l)
}

// newJob makes a job cgroup: pids.max = l.procs, the memory limit
// l.memBytes where the hierarchy has memory.
func (b *cgroupBase) newJob(l jobLimits) (*jobCgroup, error) {
	cg := b.jobOf(filepath.Join(b.dir, fmt.Sprintf("%s%d-%d", ownerPrefix(), os.Getpid(), cgroupSeq.Add(1))))
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return nil, err
	}
	for _, d := range cg.v1 {
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.removeDirs()
			return nil, err
		}
	}
	write := func(dir, file, value string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			cg.removeDirs()
			return fmt.Errorf("%s: %v", file, err)
		}
		return nil
	}
	if l.procs > 0 {
		if err := write(cg.dir, "pids.max", strconv.Itoa(l.procs)); err != nil {
			return nil, err
		}
	}
	if l.memBytes > 0 {
		mem := strconv.FormatInt(l.memBytes, 10)
		switch {
		case b.memV1 != "":
			if err := write(cg.v1[0], "memory.limit_in_bytes", mem); err != nil {
				return nil, err
			}
			// With swap accounting, swap counts against the limit too.
			_ = os.WriteFile(filepath.Join(cg.v1[0], "memory.memsw.limit_in_bytes"), []byte(mem), 0)
		case b.v2 && b.memory:
			if err := write(cg.dir, "memory.max", mem); err != nil {
				return nil, err
			}
			_ = os.WriteFile(filepath.Join(cg.dir, "memory.swap.max"), []byte("0"), 0)
		}
	}
	return cg, nil
}

// joins are the cgroup directories a process of the job joins.
func (c *jobCgroup) joins() (primary string, v1 []string) { return c.dir, c.v1 }

// cpuUsage is the CPU time the job's processes have used, and whether
// this hierarchy reports it.
func (c *jobCgroup) cpuUsage() (time.Duration, bool) {
	switch {
	case c.base.cpuV1 != "":
		b, err := os.ReadFile(filepath.Join(c.v1[len(c.v1)-1], "cpuacct.usage"))
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(n), err == nil
	case c.base.v2:
		b, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return time.Duration(n) * time.Microsecond, err == nil
			}
		}
	}
	return 0, false
}

// joinCgroup moves the calling process into the cgroup dir (the helper,
// before it confines itself).
func joinCgroup(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
}

// kill kills every process of the cgroup and its descendants' cgroups.
func (c *jobCgroup) kill() { killCgroup(c.dir, c.base.v2) }

func killCgroup(dir string, v2 bool) {
	if v2 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	// v1 (or v2 before Linux 5.14): signal each member through a pidfd,
	// until none is left; a member forking meanwhile is bounded by
	// pids.max and found by the next round.
	for round := 0; round < 100; round++ {
		pids := members(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			killMember(dir, pid)
		}
	}
}

// members lists the pids in dir and its child cgroups.
func members(dir string) []int {
	var out []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				out = append(out, n)
			}
		}
		return nil
	})
	return out
}

// killMember kills pid if, once a pidfd holds it, it is still in the
// cgroup under dir: the pidfd names one process, so a pid reused by
// another process between the listing and the kill is never signalled.
func killMember(dir string, pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return
	}
	if !inCgroup(string(b), dir) {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// inCgroup reports whether a /proc/<pid>/cgroup text places the process
// at or below the cgroup directory dir (matched by its path suffix).
func inCgroup(procCgroup, dir string) bool {
	name := "/" + filepath.Base(dir)
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		p := parts[2]
		if strings.HasSuffix(p, name) || strings.Contains(p, name+"/") {
			return true
		}
	}
	return false
}

// remove kills the cgroup's processes and removes it once they are gone
// (in the background: dying processes leave it when they are reaped).
func (c *jobCgroup) remove() {
	// The usual end of a job: its processes are gone already. One read
	// of cgroup.procs and the rmdirs, without kill's walk of the
	// cgroup's directory (a process that joins meanwhile makes the rmdir
	// fail, and the kill below finds it).
	if b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(b))) == 0 && c.removeDirs() {
		return
	}
	c.kill()
	if c.removeDirs() {
		return
	}
	go func() {
		for i := 0; i < 300; i++ {
			time.Sleep(100 * time.Millisecond)
			c.kill()
			if c.removeDirs() {
				return
			}
		}
	}()
}

// removeDirs removes the job's cgroups (the v1 companions first: they
// hold the same processes).
func (c *jobCgroup) removeDirs() bool {
	ok := true
	for _, d := range c.v1 {
		ok = removeCgroup(d) && ok
	}
	return removeCgroup(c.dir) && ok
}

// removeCgroup removes dir and its child cgroups, deepest first.
func removeCgroup(dir string) bool {
	// A job cgroup has no children (a job cannot reach /sys): one rmdir,
	// without listing a directory of some thirty control files.
	if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
		return true
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = unix.Rmdir(dirs[i])
	}
	_, err := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist)
}

// KillJobsOf ends the jobs a process left behind: every process in the
// job cgroups owner made, which are then removed. A parent calls it when
// a child odek process it started has exited (killed, say, before it
// could end its jobs). It does nothing without per-job cgroups.
func KillJobsOf(owner int) {
	b, err := jobCgroupBase()
	if err != nil {
		return
	}
	for _, dir := range ownedBy(b, func(pid int) bool { return pid == owner }) {
		b.jobOf(dir).remove()
	}
}

// ownerPrefix starts the names of this process's job cgroups:
// "odek-<pid namespace inode>-", so processes of another pid namespace
// sharing the hierarchy (another container) never take ours for theirs.
var ownerPrefix = sync.OnceValue(func() string {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return "odek-0-"
	}
	return fmt.Sprintf("odek-%d-", st.Ino)
})

// ownedBy lists the job cgroups in b of this pid namespace whose owner
// pid matches.
func ownedBy(b *cgroupBase, match func(int) bool) []string {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), ownerPrefix())
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil {
			continue
		}
		if match(pid) {
			out = append(out, filepath.Join(b.dir, e.Name()))
		}
	}
	return out
}

// sweepOrphans ends job cgroups whose owner process is gone (a worker
// killed before it could end its jobs).
func sweepOrphans(b *cgroupBase) {
	for _, dir := range ownedBy(b, func(pid int) bool { return pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH }) {
		b.jobOf(dir).remove()
	}
}
