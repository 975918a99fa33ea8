//go:build windows

package embedded

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLockExclusive takes an exclusive lock on f's first byte without
// waiting; held reports that another process has it. Windows drops it
// when the process ends.
func tryLockExclusive(f *os.File) (held bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &windows.Overlapped{})
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	return false, err
}
