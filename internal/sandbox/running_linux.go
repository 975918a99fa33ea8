//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Running reports whether any process the jail's commands started is
// still alive (a process a command left running: cmd &, nohup), the
// job's supervisor aside. Inside the jail nothing can leave its process
// group (Spec.LockSession) or the job's cgroup, so the cgroup, where the
// job has one, or else the groups the jail started, hold them all. A
// group number reused by an unrelated group leader reads as running: the
// answer errs towards true. The shell tool asks before it runs git while
// one is (internal/tools/gitline.go).
func (j *Jail) Running() bool {
	j.mu.Lock()
	groups := append([]int(nil), j.groups...)
	cg := j.cg
	sup := 0
	if j.sup != nil {
		sup = j.sup.pid
	}
	j.mu.Unlock()
	if cg != nil {
		if b, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err != nil || pid != sup {
					return true
				}
			}
			return false
		}
	}
	for _, pgid := range groups {
		if err := unix.Kill(-pgid, 0); err != unix.ESRCH {
			return true
		}
	}
	return false
}
