package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

// TestWriteWaitsForItsReplicaOnItsOwnConnection proves where the WAIT of
// a user-visible write goes, on Sentinel and on the 3+3 cluster.
//
// WAIT counts the replication offset of the connection it runs on. On a
// connection that wrote nothing it answers at once with every connected
// replica, even a stalled one; on another master it counts that master's
// replicas. So with the queue master's own replica stopped (SIGSTOP), only
// a WAIT on the very connection of the write can fall short, and with the
// other masters' replicas stopped instead, only a WAIT sent elsewhere
// could. The test checks both, counts the confirmed acknowledgements of
// Ack and AckResult, and that no node but the queue's master ever saw a
// WAIT. Without the WAIT (the old code) nothing falls short and it fails;
// a keyless WAIT through the cluster client lands on other masters and
// fails its last check.
func TestWriteWaitsForItsReplicaOnItsOwnConnection(t *testing.T) {
	for _, mode := range []string{queue.ModeSentinel, queue.ModeCluster} {
		t.Run(mode, func(t *testing.T) {
			tp := queuetest.StartTopology(t, mode)
			ctx := context.Background()
			key := queue.KeyPrefix("") + "jobs"
			for _, n := range tp.Nodes {
				if err := n.Client().ConfigResetStat(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			c := tp.Client()
			q, err := queue.NewRedis(ctx, c, queue.Options{ReplicaTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if n := q.WaitsForReplicas(); n != 1 {
				t.Fatalf("WaitsForReplicas = %d on a master with a replica, want 1 (auto)", n)
			}
			master, err := tp.Master(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			replica, err := tp.ReplicaOf(ctx, master)
			if err != nil {
				t.Fatal(err)
			}
			enqueue := func(i int) {
				t.Helper()
				if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i), Goal: "g"}); err != nil {
					t.Fatal(err)
				}
			}
			want := func(what string, confirmed, unconfirmed uint64, degraded bool) {
				t.Helper()
				if got := queue.Replication(c); got != (queue.ReplicationStats{Confirmed: confirmed, Unconfirmed: unconfirmed, Degraded: degraded}) {
					t.Fatalf("%s: %+v, want confirmed %d, unconfirmed %d, degraded %v", what, got, confirmed, unconfirmed, degraded)
				}
			}

			enqueue(1)
			want("replica running", 1, 0, false)

			// The other masters' replicas stopped: a WAIT that went to
			// another master would fall short here.
			var others []*queuetest.Server
			for _, n := range tp.Nodes {
				if n != master && n != replica {
					if m, _ := c.(*redis.ClusterClient); m == nil {
						continue
					}
					info, _ := n.Client().Info(ctx, "replication").Result()
					if strings.Contains(info, "role:slave") {
						n.Pause()
						others = append(others, n)
					}
				}
			}
			enqueue(2)
			want("other masters' replicas stopped", 2, 0, false)
			for _, n := range others {
				n.Resume()
			}

			// The queue master's replica stopped: only the write's own
			// connection can know the replica does not have it yet.
			replica.Pause()
			enqueue(3)
			want("own replica stopped", 2, 1, true)
			replica.Resume()
			enqueue(4)
			want("own replica back", 3, 1, false)

			// Ack and AckResult wait too.
			ls, err := q.Claim(ctx, "w", 1, time.Second)
			if err != nil || len(ls) != 1 {
				t.Fatalf("claim: %v %v", ls, err)
			}
			if err := q.Ack(ctx, ls[0], queue.Result{Status: queue.StatusSucceeded}); err != nil {
				t.Fatal(err)
			}
			want("after Ack", 4, 1, false)
			ds, err := q.ReadResults(ctx, "fe", 1, time.Second)
			if err != nil || len(ds) != 1 {
				t.Fatalf("read results: %v %v", ds, err)
			}
			if err := q.AckResult(ctx, ds[0]); err != nil {
				t.Fatal(err)
			}
			want("after AckResult", 5, 1, false)
			if h := queue.NewTopologyWatcher(c, key).Health(); h["replica_waits"] != queue.Replication(c) {
				t.Errorf("health shows replica_waits %v, want %+v", h["replica_waits"], queue.Replication(c))
			}

			// Every WAIT ran on the queue's master.
			for _, n := range tp.Nodes {
				stats, err := n.Client().Info(ctx, "commandstats").Result()
				if err != nil {
					t.Fatal(err)
				}
				calls := strings.Contains(stats, "cmdstat_wait:")
				if calls != (n == master) {
					t.Errorf("node %s (master of the queue: %v) saw WAIT: %v", n.Addr, n == master, calls)
				}
			}
		})
	}
}

// TestNoWaitWithoutReplicas: a single node without replicas never waits
// (auto), and MinReplicas -1 turns waiting off where a replica exists.
func TestNoWaitWithoutReplicas(t *testing.T) {
	ctx := context.Background()
	tp := queuetest.StartTopology(t, queue.ModeSingle)
	q, err := queue.NewRedis(ctx, tp.Client(), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := q.WaitsForReplicas(); n != 0 {
		t.Fatalf("WaitsForReplicas = %d on a node without replicas, want 0", n)
	}
	if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "g"}); err != nil {
		t.Fatal(err)
	}
	if stats, _ := tp.Nodes[0].Client().Info(ctx, "commandstats").Result(); strings.Contains(stats, "cmdstat_wait:") {
		t.Fatal("a node without replicas saw WAIT")
	}
	q2, err := queue.NewRedis(ctx, tp.Client(), queue.Options{MinReplicas: -1})
	if err != nil || q2.WaitsForReplicas() != 0 {
		t.Fatalf("MinReplicas -1: waits for %d (%v)", q2.WaitsForReplicas(), err)
	}
}
