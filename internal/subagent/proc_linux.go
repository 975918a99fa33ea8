//go:build linux

package subagent

import "syscall"

// setDeathSignal makes the kernel kill the child if the parent dies
// without cleaning up (SIGKILL, crash).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
