//go:build unix

package artifactstore

import (
	"os"
	"syscall"
)

// OpenNoFollow opens path for reading without following a final symlink
// and without blocking on a FIFO. Callers still check that the file is
// regular (File.Stat) before trusting it.
func OpenNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// LinkCount is the number of hard links of the file fi describes (1 when
// the platform does not say).
func LinkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
