//go:build windows

package schedule

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile waits for a shared (or, with write, an exclusive) lock on f's
// first byte.
func lockFile(f *os.File, write bool) error {
	var flags uint32
	if write {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &windows.Overlapped{})
}

func unlockFile(f *os.File) {
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &windows.Overlapped{})
}
