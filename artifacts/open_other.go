//go:build !unix

package artifacts

import "os"

// OpenNoFollow opens an artifact for reading; the SameFile check after the
// open catches a replaced file.
func OpenNoFollow(path string) (*os.File, error) { return os.Open(path) }
