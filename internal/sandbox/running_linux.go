//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Running reports whether any process the jail's commands started is
// still alive (a process a command left running: cmd &, nohup). Inside
// the jail nothing can leave its process group (Spec.LockSession), so the
// groups the jail started, or its cgroup where it has one, hold them all.
// A group number reused by an unrelated group leader reads as running:
// the answer errs towards true. The shell tool asks before it runs git
// while one is (internal/tools/gitline.go).
func (j *Jail) Running() bool {
	j.mu.Lock()
	groups := append([]int(nil), j.groups...)
	j.mu.Unlock()
	if j.cg != nil {
		if b, err := os.ReadFile(filepath.Join(j.cg.dir, "cgroup.procs")); err == nil {
			return strings.TrimSpace(string(b)) != ""
		}
	}
	for _, pgid := range groups {
		if err := unix.Kill(-pgid, 0); err != unix.ESRCH {
			return true
		}
	}
	return false
}
