//go:build unix && !linux

package subagent

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
