//go:build unix

package subagent

import (
	"os/exec"
	"syscall"
	"time"
)

// termGrace is how long a child gets after SIGTERM to stop its own tool
// processes before its group is killed.
const termGrace = 2 * time.Second

// setProcessGroup starts the child in a process group of its own, so the
// whole tree it starts can be signalled at once.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// killGroup stops the process group led by pid. With exited nil the
// leader has already been reaped and stragglers get SIGKILL at once;
// otherwise the group gets SIGTERM (so the child can stop the process
// groups of its own shell commands), then SIGKILL after termGrace or as
// soon as the leader exits, and killGroup returns once it has exited.
func killGroup(pid int, exited <-chan error) {
	if pid <= 0 {
		return
	}
	if exited == nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(termGrace)
	defer t.Stop()
	select {
	case <-exited:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	case <-t.C:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
}
