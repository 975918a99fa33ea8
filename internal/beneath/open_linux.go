//go:build linux

package beneath

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openBeneath resolves rel beneath dirfd in one openat2 call: no
// component may be a symbolic link (RESOLVE_NO_SYMLINKS, which also
// covers /proc's magic links; RESOLVE_NO_MAGICLINKS says so twice) and
// resolution may not leave dirfd (RESOLVE_BENEATH). Kernels before 5.6
// lack openat2 (and some container profiles refuse it); there each component is opened with O_NOFOLLOW instead.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 8 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue // a concurrent rename or mount; try again
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			// No openat2, or a seccomp profile refusing it: the fallback
			// is as strict (a real EPERM comes back from it too).
			return openComponents(dirfd, rel, flags)
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}
