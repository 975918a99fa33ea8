package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/internal/luascript"
	"github.com/redis/go-redis/v9"
)

// coalescer sends the script calls of concurrent callers to Redis together:
// one caller at a time (the leader) takes every call waiting and sends them
// as one pipeline of EVALSHAs; the others wait for their reply. With a
// single caller it costs what a plain call costs; with many, one round trip
// and one pair of system calls carry up to maxCoalesce scripts. The leader
// role goes to whoever calls while no batch is in flight; the leader sends
// one batch (its own call among them), and the calls that queued up during
// that round trip are sent by a goroutine that ends as soon as nothing is
// pending, so an idle queue holds no goroutine and no caller waits longer
// than its own batch.
type coalescer struct {
	c redis.UniversalClient
	// w, when set, ends every batch that holds a durable call with a WAIT
	// on the batch's own connection (see replicas.go).
	w *replicaWaiter

	mu       sync.Mutex
	pending  []*scriptCall
	inFlight bool
}

// maxCoalesce bounds the scripts of one pipeline.
const maxCoalesce = 256

type scriptCall struct {
	script *luascript.Script
	keys   []string
	args   []any
	val    any
	err    error
	done   chan struct{}
	// durable calls are writes a user sees acknowledged: their batch
	// waits for the replicas (coalescer.w).
	durable bool
	// reloaded: the call met NOSCRIPT and was sent again after the load.
	reloaded bool
}

// errNoKeys refuses a script call that declares no key: a cluster client
// would send it to any node.
var errNoKeys = errors.New("queue: script called with no KEYS (a cluster client could not route it)")

// run calls script with keys and args and returns its reply, sharing the
// round trip with concurrent calls. A ctx already done sends nothing.
// Otherwise ctx bounds only the wait: once queued, a script runs to
// completion whatever happens to ctx, as with any Redis call, and a reply
// that is in when ctx ends is returned rather than ctx's error.
func (co *coalescer) run(ctx context.Context, script *luascript.Script, keys []string, args ...any) (any, error) {
	return co.call(ctx, false, script, keys, args)
}

// runDurable is run for a write whose success the caller passes on to a
// user (enqueue, ack, cancel): its reply comes after the replicas hold
// it, when the coalescer waits for replicas.
func (co *coalescer) runDurable(ctx context.Context, script *luascript.Script, keys []string, args ...any) (any, error) {
	return co.call(ctx, true, script, keys, args)
}

func (co *coalescer) call(ctx context.Context, durable bool, script *luascript.Script, keys []string, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errNoKeys
	}
	call := &scriptCall{script: script, keys: keys, args: args, done: make(chan struct{}), durable: durable}
	co.mu.Lock()
	co.pending = append(co.pending, call)
	lead := !co.inFlight
	if lead {
		co.inFlight = true
	}
	co.mu.Unlock()
	if lead {
		co.lead()
	}
	select {
	case <-call.done:
		return call.val, call.err
	case <-ctx.Done():
		select {
		case <-call.done: // both ready: the reply tells what happened
			return call.val, call.err
		default:
			return nil, ctx.Err()
		}
	}
}

// runAll calls script once per argument list, all in the round trip the
// coalescer sends next (up to maxCoalesce per pipeline), and returns the
// replies in order. ctx bounds the wait as for run.
func (co *coalescer) runAll(ctx context.Context, script *luascript.Script, keys []string, argLists [][]any) ([]any, []error) {
	vals, errs := make([]any, len(argLists)), make([]error, len(argLists))
	err := ctx.Err()
	if len(keys) == 0 {
		err = errNoKeys
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return vals, errs
	}
	calls := make([]*scriptCall, len(argLists))
	for i, a := range argLists {
		calls[i] = &scriptCall{script: script, keys: keys, args: a, done: make(chan struct{})}
	}
	co.mu.Lock()
	co.pending = append(co.pending, calls...)
	lead := !co.inFlight
	if lead {
		co.inFlight = true
	}
	co.mu.Unlock()
	if lead {
		// Send until our own calls are out, then hand the role on as lead does.
		for co.sendNext() {
			if calls[len(calls)-1].isDone() {
				go func() {
					for co.sendNext() {
					}
				}()
				break
			}
		}
	}
	for i, c := range calls {
		select {
		case <-c.done:
			vals[i], errs[i] = c.val, c.err
		case <-ctx.Done():
			select {
			case <-c.done:
				vals[i], errs[i] = c.val, c.err
			default:
				errs[i] = ctx.Err()
			}
		}
	}
	return vals, errs
}

func (c *scriptCall) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// lead sends one batch, which holds the leader's own call (it was queued
// first when no batch was in flight). Calls queued meanwhile are sent by a
// goroutine that keeps the role until nothing is pending, so the leader's
// caller gets its reply after one round trip however busy the queue is.
func (co *coalescer) lead() {
	if co.sendNext() {
		go func() {
			for co.sendNext() {
			}
		}()
	}
}

// sendNext sends up to maxCoalesce pending calls and reports whether more
// are pending; when none are, it gives up the leader role.
func (co *coalescer) sendNext() bool {
	co.mu.Lock()
	n := min(len(co.pending), maxCoalesce)
	if n == 0 {
		co.inFlight = false
		co.mu.Unlock()
		return false
	}
	batch := co.pending[:n:n]
	co.pending = append([]*scriptCall(nil), co.pending[n:]...)
	co.mu.Unlock()
	co.send(batch)
	for _, c := range batch {
		close(c.done)
	}
	co.mu.Lock()
	more := len(co.pending) > 0
	if !more {
		co.inFlight = false
	}
	co.mu.Unlock()
	return more
}

// send runs batch in one pipeline; calls that found their script missing
// (NOSCRIPT: Redis restarted or flushed) are sent again with the script
// loaded. The pipeline runs under a context of its own: a caller that
// stops waiting must not cancel the others' calls. A batch holding a
// durable call, when the coalescer waits for replicas, runs on one
// connection to the queue's master and ends with WAIT there.
func (co *coalescer) send(batch []*scriptCall) {
	ctx := context.Background()
	loaded := map[*luascript.Script]bool{}
	for try := 0; try < maxSendTries && len(batch) > 0; try++ {
		durable := 0
		for _, c := range batch {
			if c.durable {
				durable++
			}
		}
		var pipe redis.Pipeliner
		var cc *redis.ClusterClient
		if co.w != nil && durable > 0 {
			var err error
			if pipe, cc, err = co.w.pipeline(ctx); err != nil {
				for _, c := range batch {
					c.err = err
				}
				return
			}
		} else {
			pipe = co.c.Pipeline()
		}
		cmds := make([]*redis.Cmd, len(batch))
		for i, c := range batch {
			cmds[i] = pipe.EvalSha(ctx, c.script.Hash(), c.keys, c.args...)
		}
		var wait *redis.IntCmd
		if co.w != nil && durable > 0 {
			wait = co.w.add(ctx, pipe)
		}
		_, _ = pipe.Exec(ctx)
		var retry []*scriptCall
		errs := make([]error, 0, 1)
		moved := false
		for i, c := range batch {
			c.val, c.err = cmds[i].Result()
			if c.err != nil && len(errs) == 0 {
				errs = append(errs, c.err)
			}
			switch {
			case c.err == nil:
			case strings.HasPrefix(c.err.Error(), "NOSCRIPT"):
				// Load each missing script once per send, and send each
				// call that missed it once more.
				if c.reloaded {
					continue // missing again after a load: keep the error
				}
				c.reloaded = true
				if !loaded[c.script] {
					loaded[c.script] = true
					if err := c.script.Load(ctx, co.c).Err(); err != nil {
						continue // keep the NOSCRIPT error
					}
				}
				retry = append(retry, c)
			case cc != nil && (notRunHere(c.err) || Unreachable(c.err)):
				// The pinned node does not serve the slot (any more), or
				// the connection to it failed: send the script again once
				// the slot map is reloaded (settle asks for the reload).
				// The cluster client's own pipeline would do the same; a
				// script that did run is recognised when resent, as after
				// go-redis' own resend (see NewRedis).
				moved = true
				retry = append(retry, c)
			}
		}
		if wait != nil {
			// Count the durable writes that succeeded (and so were
			// waited for); a retried NOSCRIPT call is counted with its
			// own batch.
			ok := 0
			for _, c := range batch {
				if c.durable && c.err == nil {
					ok++
				}
			}
			co.w.settle(wait, ok, cc, errs...)
		}
		batch = retry
		if moved && len(batch) > 0 && try+1 < maxSendTries {
			// The cluster client reloads its slot map meanwhile.
			time.Sleep(min(50*time.Millisecond<<try, 250*time.Millisecond))
		}
	}
}

// maxSendTries bounds the sends of one batch: a NOSCRIPT reload, and on
// a cluster, re-routing after a failover (about 1.3 s of waits in all).
const maxSendTries = 8

// notRunHere reports a reply by which a cluster node refused a script
// before running it because another node serves the slot.
func notRunHere(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "MOVED ") || strings.HasPrefix(s, "ASK ") || strings.HasPrefix(s, "READONLY") ||
		strings.HasPrefix(s, "TRYAGAIN") || strings.HasPrefix(s, "CLUSTERDOWN")
}
