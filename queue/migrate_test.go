package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

// TestMigrateOldLayout builds a queue in every state a job can be in, moves
// its keys to the names the old layout used (the prefix without a hash tag:
// the scripts and the data format are otherwise the same), and checks that
// a queue refuses to start on it, that Migrate moves it and is idempotent,
// and that the migrated jobs carry on: the running one is acknowledged with
// its old lease, the queued ones run, the dead letter and the session key
// stay where they are.
//
// It runs on one node and on the 3+3 cluster, where the old names hash to
// other slots than the new ones, so both the test's move to the old names
// and Migrate's move back cross slots (DUMP/RESTORE, not RENAME).
func TestMigrateOldLayout(t *testing.T) {
	t.Parallel() // every (sub)test has servers of its own
	for _, mode := range []string{queue.ModeSingle, queue.ModeCluster} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testMigrateOldLayout(t, queuetest.StartTopology(t, mode).Client())
		})
	}
}

// allKeys lists the keys matching pattern on every master.
func allKeys(t *testing.T, c redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	each := func(ctx context.Context, n *redis.Client) error {
		ks, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, each)
	} else {
		err = each(ctx, c.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// moveKey renames k to nk through c, across slots if need be.
func moveKey(t *testing.T, c redis.UniversalClient, k, nk string) {
	t.Helper()
	ctx := context.Background()
	if _, ok := c.(*redis.ClusterClient); !ok {
		if err := c.Rename(ctx, k, nk).Err(); err != nil {
			t.Fatal(err)
		}
		return
	}
	dump, err := c.Dump(ctx, k).Result()
	if err != nil {
		t.Fatal(err)
	}
	ttl, _ := c.PTTL(ctx, k).Result()
	if ttl < 0 {
		ttl = 0
	}
	if err := c.Restore(ctx, nk, ttl, dump).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, k).Err(); err != nil {
		t.Fatal(err)
	}
}

func testMigrateOldLayout(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	opts := queue.Options{LeaseTTL: time.Minute}
	q, err := queue.NewRedis(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 4 {
		j, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(1 + i%2), Goal: "g", IdempotencyKey: "k" + string(rune('a'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	running, err := q.Claim(ctx, "w1", 1, 0)
	if err != nil || len(running) != 1 {
		t.Fatalf("claim: %v %v", running, err)
	}
	if err := q.PublishProgress(ctx, running[0].Job.ID, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.WriteSharedConfig(ctx, c, "", queue.SharedConfig{LeaseTTL: time.Minute, MaxAttempts: 3}, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "odek:session:s1", "{}", 0).Err(); err != nil { // not a queue key
		t.Fatal(err)
	}
	// Make it the old layout.
	keys := allKeys(t, c, "{odek}:*")
	if len(keys) < 10 {
		t.Fatalf("keys: %v", keys)
	}
	for _, k := range keys {
		moveKey(t, c, k, "odek:"+strings.TrimPrefix(k, "{odek}:"))
	}
	if _, ok := c.(*redis.ClusterClient); ok {
		// The old names really are spread over the masters.
		slots := map[int64]bool{}
		for _, k := range keys {
			s, err := c.ClusterKeySlot(ctx, "odek:"+strings.TrimPrefix(k, "{odek}:")).Result()
			if err != nil {
				t.Fatal(err)
			}
			slots[s] = true
		}
		if len(slots) < 2 {
			t.Fatalf("old keys all in one slot: %v", slots)
		}
	}

	if _, err := queue.NewRedis(ctx, c, opts); !errors.Is(err, queue.ErrLegacyLayout) {
		t.Fatalf("NewRedis on the old layout: %v, want ErrLegacyLayout", err)
	}
	rep, err := queue.Migrate(ctx, c, "")
	if err != nil || rep.Moved != len(keys) || len(rep.Skipped) != 0 {
		t.Fatalf("migrate: %+v %v, want %d moved", rep, err, len(keys))
	}
	rep, err = queue.Migrate(ctx, c, "")
	if err != nil || rep.Moved != 0 {
		t.Fatalf("second migrate: %+v %v, want nothing to do", rep, err)
	}
	if n, _ := c.Exists(ctx, "odek:session:s1").Result(); n != 1 {
		t.Fatal("migrate moved a session key")
	}
	if left := allKeys(t, c, "odek:*"); len(left) != 1 {
		t.Fatalf("old keys left: %v", left)
	}

	q2, err := queue.NewRedis(ctx, c, opts)
	if err != nil {
		t.Fatalf("NewRedis after migrate: %v", err)
	}
	if sc, ok, err := queue.ReadSharedConfig(ctx, c, ""); err != nil || !ok || sc.MaxAttempts != 3 {
		t.Fatalf("shared config after migrate: %+v %v %v", sc, ok, err)
	}
	if p, err := q2.ReadProgress(ctx, running[0].Job.ID, "", 10, 0); err != nil || len(p) != 1 {
		t.Fatalf("progress after migrate: %v %v", p, err)
	}
	if err := q2.Ack(ctx, running[0], queue.Result{Status: queue.StatusSucceeded}); err != nil {
		t.Fatalf("ack the lease taken before the migration: %v", err)
	}
	// An idempotency key used before still dedupes.
	if _, dup, err := q2.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "g", IdempotencyKey: "ka"}); err != nil || !dup {
		t.Fatalf("idempotency key after migrate: dup=%v %v", dup, err)
	}
	done := map[string]bool{running[0].Job.ID: true}
	for len(done) < len(ids) {
		ls, err := q2.Claim(ctx, "w2", 4, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("jobs stuck after migrate: done %v of %v", done, ids)
		}
		for _, l := range ls {
			done[l.Job.ID] = true
			if err := q2.Ack(ctx, l, queue.Result{Status: queue.StatusSucceeded}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ds, err := q2.ReadResults(ctx, "bot", 10, 0)
	if err != nil || len(ds) != len(ids) {
		t.Fatalf("results after migrate: %d %v, want %d", len(ds), err, len(ids))
	}
}

// A clash the migration cannot settle (the new name holds data) is left
// alone and reported; an empty new stream is overwritten; a key whose copy
// a cut-off run already made (the new name holds the very same value) is
// finished (on a cluster, where moving is DUMP, RESTORE, DEL).
func TestMigrateReportsClash(t *testing.T) {
	t.Parallel() // every (sub)test has servers of its own
	for _, mode := range []string{queue.ModeSingle, queue.ModeCluster} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := queuetest.StartTopology(t, mode).Client()
			ctx := context.Background()
			c.Set(ctx, "odek:idem:x", "old", 0)
			c.Set(ctx, "{odek}:idem:x", "new", 0)
			c.XAdd(ctx, &redis.XAddArgs{Stream: "odek:jobs", Values: []any{"id", "x"}})
			c.XGroupCreateMkStream(ctx, "{odek}:jobs", "workers", "0") // empty: a new worker's
			wantMoved := 1
			if mode == queue.ModeCluster {
				c.Set(ctx, "odek:idem:y", "same", time.Hour)
				c.Set(ctx, "{odek}:idem:y", "same", time.Hour)
				wantMoved = 2
			}
			rep, err := queue.Migrate(ctx, c, "")
			if err != nil || rep.Moved != wantMoved || len(rep.Skipped) != 1 || rep.Skipped[0] != "odek:idem:x" {
				t.Fatalf("migrate: %+v %v, want %d moved and odek:idem:x skipped", rep, err, wantMoved)
			}
			if v, _ := c.Get(ctx, "{odek}:idem:x").Result(); v != "new" {
				t.Fatalf("clash overwritten: %q", v)
			}
			if n, _ := c.XLen(ctx, "{odek}:jobs").Result(); n != 1 {
				t.Fatalf("old jobs stream not moved over the empty new one: %d", n)
			}
			if n, _ := c.Exists(ctx, "odek:idem:y", "odek:jobs").Result(); n != 0 {
				t.Fatalf("%d old keys left after their move", n)
			}
		})
	}
}
