//go:build !unix

package subagent

// slotPool is a set of in-process slots (dir is always "").
type slotPool struct {
	dir   string
	n     int
	local chan struct{}
	waiters
}

// newPool makes n in-process slots.
func newPool(n int) (*slotPool, error) {
	return &slotPool{n: n, local: make(chan struct{}, n)}, nil
}

// openPool: without file locks a child cannot share its parent's slots;
// it gets in-process slots of its own (its children are still bounded by
// MaxConcurrency per call and by MaxDepth).
func openPool(string) (*slotPool, error) { return newPool(DefaultMaxProcesses) }

// holders is unknown: the per-chat share binds only what this process
// sees waiting.
func (p *slotPool) holders() map[string]int { return nil }

func (p *slotPool) try(string) (func(), bool) {
	select {
	case p.local <- struct{}{}:
		return func() { <-p.local }, true
	default:
		return nil, false
	}
}
