//go:build !unix

package ext

import (
	"fmt"
	"io/fs"
	"os"
)

// openNoFollow opens p for reading and refuses a symlink. Without
// O_NOFOLLOW the check is an Lstat before the open, so a link swapped in
// between the two is followed; the regular-file and mode checks after the
// open still apply.
func openNoFollow(p string) (*os.File, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("is a symbolic link")}
	}
	return os.Open(p)
}
