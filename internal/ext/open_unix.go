//go:build unix

package ext

import (
	"os"
	"syscall"
)

// openNoFollow opens p for reading, refusing a symlink (O_NOFOLLOW) and
// returning at once on a FIFO (O_NONBLOCK; the regular-file check then
// refuses it).
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
