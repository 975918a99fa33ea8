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

// openBeneath opens rel beneath root through an os.Root (no link out of
// root is followed), O_NONBLOCK so a FIFO does not block the open.
func openBeneath(root, rel string) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
}
