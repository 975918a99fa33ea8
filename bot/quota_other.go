//go:build !unix

package bot

import "io/fs"

// allocated is fi's size where stat(2)'s block count is not available.
func allocated(fi fs.FileInfo) int64 { return fi.Size() }
