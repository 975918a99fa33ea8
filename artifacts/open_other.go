//go:build !unix

package artifacts

import "os"

// openNoFollow opens an artifact for reading; the SameFile check after the
// open catches a replaced file.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
