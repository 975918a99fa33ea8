package subagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// SlotsEnv carries the directory of the process tree's sub-agent slots
// from a top-level process to its children (and theirs).
const SlotsEnv = "ODEK_SUBAGENT_SLOTS"

// ErrProcessCap starts the error of a task refused because the top-level
// process already runs Settings.MaxProcesses sub-agents.
var ErrProcessCap = errors.New("subagent: the sub-agent process cap is reached")

// The per-worker cap on sub-agent processes.
//
// A worker's jobs, and the sub-agents of those sub-agents, run in
// different processes, so the cap is a set of slots every process of the
// tree can take: MaxProcesses lock files in a private directory the
// top-level process makes (0700, under the system temp directory, which no
// sandboxed job is granted), named to children in SlotsEnv. A parent takes
// a slot (flock LOCK_EX|LOCK_NB on one file) before it starts a child and
// holds it until the child and its process group are gone; the kernel
// drops the lock when the holder exits, however it exits, so a crashed
// parent leaks no slot. A top-level run's task waits for a slot (polling,
// with the run's context); a nested run's task never waits — it holds a
// slot itself, and waiting could deadlock the tree — and is refused with
// ErrProcessCap instead. Without flock (non-unix systems) the slots are
// in-process only: the top-level process's children are capped, and each
// child's own children by the per-call MaxConcurrency.

var (
	poolsMu sync.Mutex
	pools   = map[string]*slotPool{} // by directory ("" + n for own pools)
)

// pool returns the slot pool this Delegate's children take from: the one
// named in its environment when it is itself a sub-agent, else the
// process's own pool of Settings.MaxProcesses slots, made once.
func (d *Delegate) pool() (*slotPool, error) {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	if d.o.Depth > 0 {
		if dir := envValue(d.environ(), SlotsEnv); dir != "" {
			if p := pools[dir]; p != nil {
				return p, nil
			}
			p, err := openPool(dir)
			if err != nil {
				return nil, err
			}
			pools[dir] = p
			return p, nil
		}
	}
	key := fmt.Sprintf("own:%d", d.o.Settings.MaxProcesses)
	if p := pools[key]; p != nil {
		return p, nil
	}
	p, err := newPool(d.o.Settings.MaxProcesses)
	if err != nil {
		return nil, err
	}
	pools[key] = p
	return p, nil
}

func (d *Delegate) environ() []string {
	if d.o.Environ != nil {
		return d.o.Environ
	}
	return os.Environ()
}

// envValue is the value of the first key=value entry of environ for key.
func envValue(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// slotWait is how often a waiting task tries the slots again.
const slotWait = 50 * time.Millisecond

// acquire takes a slot; wait says whether to wait for one (a top-level
// run) or fail at once with ErrProcessCap. The returned function gives
// the slot back.
func (p *slotPool) acquire(ctx context.Context, wait bool) (func(), error) {
	for {
		if release, ok := p.try(); ok {
			return release, nil
		}
		if !wait {
			return nil, fmt.Errorf("%w: %d sub-agent processes already run under this worker (subagent.max_processes); this task did not start — do the work yourself", ErrProcessCap, p.n)
		}
		t := time.NewTimer(slotWait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
