//go:build unix

package artifacts

import (
	"errors"
	"os"
	"syscall"
)

// OpenNoFollow opens an artifact for reading, here and for whoever reads a
// validated artifact later (artifact_read, sub-agent results); callers
// still check the file is the regular file validated. O_NOFOLLOW refuses a
// symbolic link swapped in after resolution; O_NONBLOCK keeps the open from
// hanging on a FIFO swapped in (refused afterwards by the regular-file
// check).
func OpenNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, ErrChanged
	}
	return f, err
}
