//go:build unix

package hooks

import (
	"os/exec"
	"syscall"
)

// newProcessGroup starts the hook in a process group of its own, so a
// timeout ends everything it started.
func newProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup ends the hook's whole process group.
func killProcessGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
