package queue

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// Redis replicates asynchronously: a master acknowledges a write before
// any replica has it, and a master killed in that window takes the write
// with it. The queue closes that window for the writes a user sees
// acknowledged (Enqueue, Ack, Cancel, AckResult) with WAIT: the pipeline
// that carries the write ends with `WAIT <n> <timeout>` on the same
// connection, so Redis answers it once n replicas hold everything that
// connection wrote. WAIT counts the replication offset of its own
// connection, which is why it must not go anywhere else: go-redis' cluster
// client would send a keyless WAIT to any node (or to every master), where
// it proves nothing. See docs/QUEUE.md "Durability through failover".

// DefaultReplicaTimeout is how long a write waits for its replicas when
// neither Options.ReplicaTimeout nor the URL's replica_timeout says.
const DefaultReplicaTimeout = time.Second

// degradedReplicaTimeout is the wait after a shortfall, until a write is
// confirmed again: a replica that is down would otherwise cost every write
// the full timeout.
const degradedReplicaTimeout = 10 * time.Millisecond

// ReplicaOptions are the WAIT settings a REDIS_URL carries (min_replicas,
// replica_timeout); see RedisURL.
type ReplicaOptions struct {
	// MinReplicas: -1 (or unset in the URL) decides from the topology at
	// NewRedis (1 when the master reports a replica, else 0); 0 never
	// waits; n waits for n replicas.
	MinReplicas int
	// Timeout bounds one wait; 0 means DefaultReplicaTimeout.
	Timeout time.Duration
}

// replicaState is what one client's writes share: the URL's settings, the
// shortfalls counted and whether the last wait fell short.
type replicaState struct {
	opts       ReplicaOptions
	fromURL    bool
	shortfalls atomic.Uint64 // writes accepted without the replicas' confirmation
	confirmed  atomic.Uint64 // writes the replicas confirmed
	degraded   atomic.Bool
}

// clientStates maps a client (by weak pointer, so the map keeps no client
// alive) to its replicaState; an entry goes when its client is collected.
var clientStates sync.Map

func clientKey(c redis.UniversalClient) any {
	switch c := c.(type) {
	case *redis.Client:
		return weak.Make(c)
	case *redis.ClusterClient:
		return weak.Make(c)
	}
	return nil
}

// stateOf returns c's shared state, made on first use.
func stateOf(c redis.UniversalClient) *replicaState {
	k := clientKey(c)
	if k == nil {
		return &replicaState{opts: ReplicaOptions{MinReplicas: -1}}
	}
	if v, ok := clientStates.Load(k); ok {
		return v.(*replicaState)
	}
	v, loaded := clientStates.LoadOrStore(k, &replicaState{opts: ReplicaOptions{MinReplicas: -1}})
	if !loaded {
		switch c := c.(type) {
		case *redis.Client:
			runtime.AddCleanup(c, func(k any) { clientStates.Delete(k) }, k)
		case *redis.ClusterClient:
			runtime.AddCleanup(c, func(k any) { clientStates.Delete(k) }, k)
		}
	}
	return v.(*replicaState)
}

// setURLReplicas records a URL's WAIT settings for the client built from it.
func setURLReplicas(c redis.UniversalClient, o ReplicaOptions) {
	s := stateOf(c)
	s.opts, s.fromURL = o, true
}

// ReplicationStats are the writes of one client that waited for replicas.
type ReplicationStats struct {
	// Confirmed writes were held by the wanted replicas before the caller
	// saw them succeed.
	Confirmed uint64 `json:"confirmed"`
	// Unconfirmed writes were accepted although no replica confirmed them
	// within the timeout (replica down or lagging): a master killed before
	// it sent them on loses them.
	Unconfirmed uint64 `json:"unconfirmed"`
	// Degraded is true while the last wait fell short (waits are then cut
	// to a few milliseconds until one is confirmed again).
	Degraded bool `json:"degraded"`
}

// Replication returns the WAIT counts of the queue values on c (the
// worker's /healthz, and its metric odek_redis_unreplicated_writes_total).
func Replication(c redis.UniversalClient) ReplicationStats {
	s := stateOf(c)
	return ReplicationStats{Confirmed: s.confirmed.Load(), Unconfirmed: s.shortfalls.Load(), Degraded: s.degraded.Load()}
}

// replicaWaiter issues the WAIT of one queue value.
type replicaWaiter struct {
	c       redis.UniversalClient
	key     string // the queue's jobs stream: its slot's master is the node to wait on
	n       int
	timeout time.Duration
	st      *replicaState
}

// newReplicaWaiter resolves the settings: Options.MinReplicas first (-1
// never waits), then the URL's min_replicas, then the topology (a replica
// reported by the master at start means 1, none means 0). It returns nil
// when writes do not wait.
func newReplicaWaiter(ctx context.Context, c redis.UniversalClient, key string, o Options) *replicaWaiter {
	st := stateOf(c)
	n, timeout := o.MinReplicas, o.ReplicaTimeout
	switch {
	case n < 0:
		return nil
	case n == 0 && st.fromURL:
		n = st.opts.MinReplicas // -1 auto, 0 off, n
	case n == 0:
		n = -1
	}
	if timeout == 0 {
		timeout = st.opts.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultReplicaTimeout
	}
	if n == -1 {
		n = 0
		if ti, err := DescribeRedis(ctx, c, key); err == nil && len(ti.Replicas) > 0 {
			n = 1
		}
	}
	if n <= 0 {
		return nil
	}
	// go-redis reads a pipeline's replies within ReadTimeout (3 s by
	// default): a wait must end well before it.
	if rt := readTimeout(c); rt > 0 && timeout > rt/2 {
		timeout = rt / 2
	}
	return &replicaWaiter{c: c, key: key, n: n, timeout: max(timeout, time.Millisecond), st: st}
}

func readTimeout(c redis.UniversalClient) time.Duration {
	var rt time.Duration
	switch c := c.(type) {
	case *redis.Client:
		rt = c.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	}
	if rt == 0 {
		rt = 3 * time.Second // go-redis' default
	}
	return rt
}

// pipeline returns a pipeline whose commands all run on one connection to
// the master of w.key, and the node client's cluster to refresh when the
// node turns out not to be that master any more (nil otherwise).
func (w *replicaWaiter) pipeline(ctx context.Context) (redis.Pipeliner, *redis.ClusterClient, error) {
	if cc, ok := w.c.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, w.key)
		if err != nil {
			return nil, nil, err
		}
		return node.Pipeline(), cc, nil
	}
	return w.c.Pipeline(), nil, nil
}

// add appends the WAIT to pipe.
func (w *replicaWaiter) add(ctx context.Context, pipe redis.Pipeliner) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "wait", w.n, &waitTimeout{w: w})
	_ = pipe.Process(ctx, cmd)
	return cmd
}

// waitTimeout is WAIT's timeout argument, decided each time go-redis
// writes the command: the full timeout, or the short one while degraded.
// A second write of the same command is go-redis resending the pipeline
// after its connection broke, most likely to a master a failover just
// promoted, which has no replica yet: the resend waits briefly, so the
// writes in it (a worker's acks, which hold its job slots) do not wait
// out the whole timeout.
type waitTimeout struct {
	w      *replicaWaiter
	writes int
}

func (a *waitTimeout) MarshalBinary() ([]byte, error) {
	a.writes++
	if a.writes > 1 {
		a.w.st.degraded.Store(true)
	}
	t := a.w.timeout
	if a.w.st.degraded.Load() {
		t = min(t, degradedReplicaTimeout)
	}
	return strconv.AppendInt(nil, t.Milliseconds(), 10), nil
}

// settle counts writes (the durable calls of the pipeline) by the WAIT's
// answer. A wait that failed outright makes the next waits short; when
// the connection broke, no write of the batch succeeded (their own errors
// tell the callers), so only a refused WAIT counts writes as unconfirmed.
func (w *replicaWaiter) settle(cmd *redis.IntCmd, writes int, cc *redis.ClusterClient, errs ...error) {
	if cc != nil {
		for _, err := range append(errs, cmd.Err()) {
			if err != nil && (Unreachable(err) || strings.HasPrefix(err.Error(), "ERR WAIT cannot be used with replica")) {
				// The node is not the slot's master any more (MOVED,
				// READONLY) or is gone: reload the slot map now rather
				// than at the next periodic reload.
				cc.ReloadState(context.Background())
				break
			}
		}
	}
	n, err := cmd.Result()
	if err != nil {
		// The connection broke or the node is no master: a failover may
		// be under way, and a newly promoted master has no replica yet.
		// Wait briefly until a write is confirmed again, rather than the
		// full timeout on the first writes after it. Writes that succeeded
		// all the same (a service that refuses WAIT) are unconfirmed.
		w.st.degraded.Store(true)
		w.st.shortfalls.Add(uint64(writes))
		return
	}
	if writes == 0 {
		return
	}
	if int(n) >= w.n {
		w.st.confirmed.Add(uint64(writes))
		w.st.degraded.Store(false)
		return
	}
	w.st.shortfalls.Add(uint64(writes))
	w.st.degraded.Store(true)
}
