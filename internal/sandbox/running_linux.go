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
// still alive (a process a command left running: cmd &, nohup). Inside
// the jail nothing can leave its process group (Spec.LockSession), so the
// groups the jail started, or its cgroup where it has one, hold them all
// (a supervised call's processes may leave their group, but a supervisor
// runs only where the job has a cgroup).
// A group number reused by an unrelated group leader reads as running:
// the answer errs towards true. The shell tool asks before it runs git
// while one is (internal/tools/gitline.go).
//
// The job's supervisor (supervise_linux.go) lives in the job's cgroup
// for the job's life and is not counted: only what the commands left.
func (j *Jail) Running() bool {
	j.mu.Lock()
	groups := append([]int(nil), j.groups...)
	cg, sup := j.cg, 0
	if j.sup != nil && !j.sup.isDead() {
		sup = j.sup.pid
	}
	j.mu.Unlock()
	if cg != nil {
		if b, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if f != strconv.Itoa(sup) {
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
