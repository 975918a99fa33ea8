//go:build unix

package artifacts

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens an artifact for reading. O_NOFOLLOW refuses a
// symbolic link swapped in after resolution; O_NONBLOCK keeps the open from
// hanging on a FIFO swapped in (refused afterwards by the regular-file
// check).
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, ErrChanged
	}
	return f, err
}
