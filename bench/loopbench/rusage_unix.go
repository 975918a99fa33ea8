//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSSMiB is the child's peak resident set from rusage: Linux reports
// ru_maxrss in KiB, macOS and the BSDs' darwin-like kernels in bytes.
func peakRSSMiB(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return float64(ru.Maxrss) / (1 << 20)
	}
	return float64(ru.Maxrss) / 1024
}
