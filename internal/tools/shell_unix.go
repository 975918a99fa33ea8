//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel starts cmd in a session of its own (so it has no
// controlling terminal and cannot read odek's), which makes it the leader
// of its own process group, and makes its cancellation kill that whole
// group, grandchildren included. A process that leaves the group (setsid)
// is not reached here; a confined job's Jail kills those at the job's end.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		// Negative pid: the whole process group.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
