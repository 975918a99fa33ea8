//go:build unix && !linux

package subagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// slotPool is the set of slots of one process tree: n lock files in dir.
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

// holders is unknown with flock: a lock cannot be tested without taking
// it. The per-chat share then binds only what this process sees waiting.
func (p *slotPool) holders() map[string]int { return nil }

// try takes the first free slot, without waiting (tag is not recorded).
func (p *slotPool) try(string) (func(), bool) {
	for i := range p.n {
		f, err := os.OpenFile(slotPath(p.dir, i), os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, true
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			continue
		}
	}
	return nil, false
}
