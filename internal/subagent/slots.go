package subagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// TenantEnv carries the tenant tag of a sub-agent's tree (its chat) from
// a parent to its children, so every process of one chat's tree counts
// against that chat's share of the slots.
const TenantEnv = "ODEK_SUBAGENT_TENANT"

// ErrProcessCap starts the error of a task refused because the top-level
// process already runs Settings.MaxProcesses sub-agents, or the task's
// chat already holds its share of them.
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
//
// Each chat gets a fair share of the slots: a task of a tenant (Tenant:
// the chat's directory in a worker, carried to children in TenantEnv) may
// take a slot only while its tenant holds fewer than
// ShareOf(slots, active tenants), where the active tenants are those
// holding a slot anywhere in the tree, those waiting in this process, and
// its own. So one chat flooding the worker with sub-agents cannot keep
// another chat's task waiting for more than the end of one of its
// children: once a second chat waits, the first may take no new slot
// until it is under its share. On Linux the holders are counted across
// processes (slots_linux.go, OFD locks); elsewhere only this process's
// waiters are known and the share is not enforced.

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

// ShareOf is one tenant's share of n slots among active tenants:
// max(1, n/active). Pure.
func ShareOf(n, active int) int {
	if active < 1 {
		active = 1
	}
	return max(1, n/active)
}

// waiters are the tenants waiting for a slot in this process.
type waiters struct {
	mu      sync.Mutex
	waiting map[string]int
}

func (w *waiters) wait(tag string, d int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == nil {
		w.waiting = map[string]int{}
	}
	w.waiting[tag] += d
	if w.waiting[tag] <= 0 {
		delete(w.waiting, tag)
	}
}

// overShare reports whether tag holds its share already, and the share.
func (p *slotPool) overShare(tag string) (bool, int) {
	held := p.holders()
	if held == nil {
		return false, p.n
	}
	active := map[string]bool{tag: true}
	for t, n := range held {
		if n > 0 {
			active[t] = true
		}
	}
	p.waiters.mu.Lock()
	for t := range p.waiters.waiting {
		active[t] = true
	}
	p.waiters.mu.Unlock()
	share := ShareOf(p.n, len(active))
	return held[tag] >= share, share
}

// tryShare takes a free slot for tag when tag is under its share.
func (p *slotPool) tryShare(tag string) (func(), bool) {
	if over, _ := p.overShare(tag); over {
		return nil, false
	}
	return p.try(tag)
}

// acquire takes a slot for tag; wait says whether to wait for one (a
// top-level run) or fail at once with ErrProcessCap. The returned
// function gives the slot back.
func (p *slotPool) acquire(ctx context.Context, wait bool, tag string) (func(), error) {
	if wait {
		p.waiters.wait(tag, 1)
		defer p.waiters.wait(tag, -1)
	}
	for {
		if release, ok := p.tryShare(tag); ok {
			return release, nil
		}
		if !wait {
			if over, share := p.overShare(tag); over {
				return nil, fmt.Errorf("%w: this chat already runs %d sub-agent processes, its share of the worker's %d while other chats use them too (subagent.max_processes); this task did not start — do the work yourself", ErrProcessCap, share, p.n)
			}
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

// tenant is the tag this Delegate's tasks count against: the one its
// parent passed (TenantEnv) when it is itself a sub-agent, else a digest
// of Options.Tenant, else of WorkDir (a worker job's chat directory).
func (d *Delegate) tenant() string {
	if d.o.Depth > 0 {
		if t := envValue(d.environ(), TenantEnv); t != "" && len(t) <= maxTenantLen {
			return t
		}
	}
	key := d.o.Tenant
	if key == "" {
		key = d.o.WorkDir
	}
	if key == "" {
		key, _ = os.Getwd()
	}
	sum := sha256.Sum256([]byte("odek-subagent-tenant/v1\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// maxTenantLen bounds a tenant tag taken from the environment.
const maxTenantLen = 64
