//go:build unix

package bot

import (
	"io/fs"
	"syscall"
)

// allocated is the bytes fi's entry holds on disk: its 512-byte blocks
// (stat(2)'s st_blocks), or its size where the system does not say.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
