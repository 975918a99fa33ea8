package queue

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// coalescer sends the script calls of concurrent callers to Redis together:
// one caller at a time (the leader) takes every call waiting and sends them
// as one pipeline of EVALSHAs; the others wait for their reply. With a
// single caller it costs what a plain call costs; with many, one round trip
// and one pair of system calls carry up to maxCoalesce scripts. There is no
// background goroutine: the leader role passes to whoever calls while no
// batch is in flight, so an idle queue holds nothing.
type coalescer struct {
	c *redis.Client

	mu       sync.Mutex
	pending  []*scriptCall
	inFlight bool
}

// maxCoalesce bounds the scripts of one pipeline.
const maxCoalesce = 256

type scriptCall struct {
	script *redis.Script
	args   []any
	val    any
	err    error
	done   chan struct{}
}

// run calls script with args (no KEYS) and returns its reply, sharing the
// round trip with concurrent calls. A ctx already done sends nothing.
// Otherwise ctx bounds only the wait: once queued, a script runs to
// completion whatever happens to ctx, as with any Redis call, and a reply
// that is in when ctx ends is returned rather than ctx's error.
func (co *coalescer) run(ctx context.Context, script *redis.Script, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	call := &scriptCall{script: script, args: args, done: make(chan struct{})}
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

// lead sends batches until nothing is pending, then gives up the role.
func (co *coalescer) lead() {
	for {
		co.mu.Lock()
		n := min(len(co.pending), maxCoalesce)
		if n == 0 {
			co.inFlight = false
			co.mu.Unlock()
			return
		}
		batch := co.pending[:n:n]
		co.pending = append([]*scriptCall(nil), co.pending[n:]...)
		co.mu.Unlock()
		co.send(batch)
		for _, c := range batch {
			close(c.done)
		}
	}
}

// send runs batch in one pipeline; calls that found their script missing
// (NOSCRIPT: Redis restarted or flushed) are sent again with the script
// loaded. The pipeline runs under a context of its own: a caller that
// stops waiting must not cancel the others' calls.
func (co *coalescer) send(batch []*scriptCall) {
	ctx := context.Background()
	for try := 0; try < 2 && len(batch) > 0; try++ {
		pipe := co.c.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for i, c := range batch {
			cmds[i] = pipe.EvalSha(ctx, c.script.Hash(), nil, c.args...)
		}
		_, _ = pipe.Exec(ctx)
		var retry []*scriptCall
		loaded := map[*redis.Script]bool{}
		for i, c := range batch {
			c.val, c.err = cmds[i].Result()
			if c.err != nil && try == 0 && strings.HasPrefix(c.err.Error(), "NOSCRIPT") {
				if !loaded[c.script] {
					loaded[c.script] = true
					if err := c.script.Load(ctx, co.c).Err(); err != nil {
						continue // keep the NOSCRIPT error
					}
				}
				retry = append(retry, c)
			}
		}
		batch = retry
	}
}
