//go:build unix

package subagent

import (
	"fmt"
	"os"
	"path/filepath"
)

// slotPool is the set of slots of one process tree: n lock files in dir
// (how a slot is held: slots_linux.go, slots_flock.go).
type slotPool struct {
	dir string
	n   int
	waiters
}

// newPool makes a private directory with n slot files.
func newPool(n int) (*slotPool, error) {
	dir, err := os.MkdirTemp("", "odek-subagent-slots-")
	if err != nil {
		return nil, fmt.Errorf("subagent: slot directory: %w", err)
	}
	for i := range n {
		f, err := os.OpenFile(slotPath(dir, i), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("subagent: slot file: %w", err)
		}
		f.Close()
	}
	return &slotPool{dir: dir, n: n}, nil
}

// openPool uses the slots a top-level process made in dir.
func openPool(dir string) (*slotPool, error) {
	n := 0
	for ; ; n++ {
		if _, err := os.Lstat(slotPath(dir, n)); err != nil {
			break
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("subagent: %s=%s holds no slot files", SlotsEnv, dir)
	}
	return &slotPool{dir: dir, n: n}, nil
}

func slotPath(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("slot-%02d", i)) }
