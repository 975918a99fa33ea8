//go:build unix

package schedule

import (
	"os"
	"syscall"
)

// lockFile waits for a shared (or, with write, an exclusive) flock on f.
func lockFile(f *os.File, write bool) error {
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	return syscall.Flock(int(f.Fd()), how)
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
