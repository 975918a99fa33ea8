//go:build linux

package subagent

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// On Linux a slot is held by an open-file-description lock (F_OFD_SETLK) on its
// file, and its holder writes its tenant's tag into it. Unlike flock, an
// OFD lock can be tested without taking it (F_OFD_GETLK), so any process
// of the tree can count who holds what (holders) and give each chat its
// share; unlike classic POSIX locks, closing another descriptor of the
// file does not drop it. The kernel drops it when the holder exits.

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
