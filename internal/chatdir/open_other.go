//go:build !unix

package chatdir

import "os"

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
