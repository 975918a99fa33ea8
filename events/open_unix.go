//go:build unix

package events

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens path for appending events. O_NOFOLLOW makes the open
// itself fail on a symbolic link, whatever an earlier Lstat saw, and
// O_NONBLOCK keeps it from hanging on a FIFO (which is then refused by the
// caller's Fstat check, or fails here with ENXIO when no reader is
// attached). os.OpenFile adds O_CLOEXEC.
func openNoFollow(path string) (*os.File, error) {
	const flags = os.O_WRONLY | os.O_APPEND | os.O_CREATE | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	f, err := os.OpenFile(path, flags, 0o600)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%w: %s (refused by O_NOFOLLOW)", ErrSymlink, path)
	case errors.Is(err, syscall.ENXIO):
		return nil, fmt.Errorf("%w: %s is a named pipe", ErrNotRegular, path)
	default:
		return nil, fmt.Errorf("events: open events file: %w", err)
	}
}
