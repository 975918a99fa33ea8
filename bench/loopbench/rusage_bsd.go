//go:build unix && !linux

package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// measure runs cmd to its end and returns its CPU time and peak resident
// set from rusage (macOS reports ru_maxrss in bytes, the BSDs in KiB).
// A child started by a Go program may report its parent's peak there
// when the parent is larger (the parent's memory is shared until exec);
// on Linux, rusage_linux.go reads the child's own.
func measure(cmd *exec.Cmd) (usage, error) {
	if err := cmd.Run(); err != nil {
		return usage{}, err
	}
	ps := cmd.ProcessState
	u := usage{user: ps.UserTime(), sys: ps.SystemTime(), rssMiB: -1}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.rssMiB = float64(ru.Maxrss) / 1024
		if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
			u.rssMiB = float64(ru.Maxrss) / (1 << 20)
		}
	}
	return u, nil
}
