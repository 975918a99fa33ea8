//go:build linux

package subagent

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// slotPool is the set of slots of one process tree: n lock files in dir.
// A slot is held by an open-file-description lock (F_OFD_SETLK) on its
// file, and its holder writes its tenant's tag into it. Unlike flock, an
// OFD lock can be tested without taking it (F_OFD_GETLK), so any process
// of the tree can count who holds what (holders) and give each chat its
// share; unlike classic POSIX locks, closing another descriptor of the
// file does not drop it. The kernel drops it when the holder exits.
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

func openSlot(dir string, i int) (*os.File, error) {
	return os.OpenFile(slotPath(dir, i), os.O_RDWR|syscall.O_NOFOLLOW, 0)
}

// try takes the first free slot for tag, without waiting.
func (p *slotPool) try(tag string) (func(), bool) {
	for i := range p.n {
		f, err := openSlot(p.dir, i)
		if err != nil {
			continue
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
			f.Close()
			continue
		}
		if f.Truncate(0) != nil {
			f.Close()
			continue
		}
		if _, err := f.WriteAt([]byte(tag), 0); err != nil {
			f.Close()
			continue
		}
		return func() { f.Close() }, true
	}
	return nil, false
}

// maxTagLen bounds what holders reads of a slot's tag.
const maxTagLen = 64

// holders counts the held slots by tenant tag, over every process of the
// tree.
func (p *slotPool) holders() map[string]int {
	out := map[string]int{}
	buf := make([]byte, maxTagLen)
	for i := range p.n {
		f, err := openSlot(p.dir, i)
		if err != nil {
			continue
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		if unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk) == nil && lk.Type != unix.F_UNLCK {
			n, _ := f.ReadAt(buf, 0)
			out[string(buf[:n])]++
		}
		f.Close()
	}
	return out
}
