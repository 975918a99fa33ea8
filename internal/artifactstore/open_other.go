//go:build !unix

package artifactstore

import "os"

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
