//go:build unix && !linux

package subagent

import (
	"errors"
	"os"
	"syscall"
)

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
