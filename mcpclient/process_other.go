//go:build !unix

package mcpclient

import (
	"os"
	"syscall"
)

// Without Unix process groups (Windows) the close sequence reaches the
// server process only: a grandchild it started may outlive it.
const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// signalGroup kills the process pid on sigKill. There is no SIGTERM to
// send to a Windows process, so the polite step is only the grace period
// after stdin closes.
func signalGroup(pid int, sig syscall.Signal) {
	if sig != sigKill {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// groupAlive is false: waitGroup asks only after the leader exited, and
// without process groups nothing else is tracked.
func groupAlive(int) bool { return false }

// sysProcAttr is nil: no process group to create.
func sysProcAttr() *syscall.SysProcAttr { return nil }
