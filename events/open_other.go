//go:build !unix

package events

import (
	"fmt"
	"os"
)

// openNoFollow opens path for appending events. Without O_NOFOLLOW on this
// platform the caller's Lstat and Fstat checks are the only defence
// against a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("events: open events file: %w", err)
	}
	return f, nil
}
