//go:build unix

package embedded

import (
	"errors"
	"os"
	"syscall"
)

// tryLockExclusive takes an exclusive flock on f without waiting; held
// reports that another process has it.
func tryLockExclusive(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
