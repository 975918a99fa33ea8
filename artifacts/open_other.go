//go:build !unix

package artifacts

import "os"

// OpenNoFollow opens an artifact for reading; the SameFile check after the
// open catches a replaced file.
func OpenNoFollow(path string) (*os.File, error) { return os.Open(path) }

// openBeneath opens rel beneath root through an os.Root (no link out of
// root is followed).
func openBeneath(root, rel string) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(rel)
}
