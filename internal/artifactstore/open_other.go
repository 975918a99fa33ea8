//go:build !unix

package artifactstore

import "os"

// OpenNoFollow opens path for reading (no O_NOFOLLOW on this platform).
func OpenNoFollow(path string) (*os.File, error) { return os.Open(path) }

// LinkCount is 1: this platform does not report hard links through
// os.FileInfo.
func LinkCount(os.FileInfo) uint64 { return 1 }
