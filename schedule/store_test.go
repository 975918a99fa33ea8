package schedule

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/embedded"
	"github.com/odekrun/odek/queue/queuetest"
)

// stores runs f on each Store implementation: File in memory, File on
// disk, Redis on a real redis-server.
func stores(t *testing.T, f func(t *testing.T, newStore func() Store)) {
	t.Run("memory", func(t *testing.T) {
		s := NewFile("")
		f(t, func() Store { return s })
	})
	t.Run("file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "schedules.json")
		// Every call gets its own File value, as separate processes would.
		f(t, func() Store { return NewFile(p) })
	})
	t.Run("redis", func(t *testing.T) {
		c := queuetest.StartRedis(t)
		f(t, func() Store { return NewRedis(c, "") })
	})
	t.Run("embedded", func(t *testing.T) {
		// The bbolt database of odek-bot's embedded queue; one process
		// holds it (its flock), so one Store value serves every call.
		es, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), queue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { es.Close() })
		s := NewKV(es)
		f(t, func() Store { return s })
	})
}

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func mk(t *testing.T, chat int64, spec string, now time.Time) Schedule {
	t.Helper()
	s, _, err := Prepare(Schedule{ChatID: chat, UserID: 7, Spec: spec, Text: "check the build"}, Limits{MinInterval: time.Second}, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreCRUD(t *testing.T) { stores(t, storeCRUD) }

func storeCRUD(t *testing.T, ns func() Store) {
	ctx := context.Background()
	a, b, c := mk(t, 1, "every 1m", t0), mk(t, 1, "0 9 * * *", t0), mk(t, 2, "at 2026-12-03T09:00:00Z", t0)
	for _, s := range []Schedule{a, b, c} {
		if err := ns().Create(ctx, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns().Create(ctx, Schedule{ID: a.ID, ChatID: 9, Text: "x", Spec: "every 1m"}, 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("create of a taken id: %v, want ErrConflict", err)
	}
	got, err := ns().Get(ctx, a.ID)
	if err != nil || got.Text != a.Text || !got.Next.Equal(t0.Add(time.Minute)) || !got.Enabled || got.Spec != "every 1m" {
		t.Fatalf("get: %+v %v", got, err)
	}
	l, err := ns().List(ctx, 1)
	if err != nil || len(l) != 2 {
		t.Fatalf("list chat 1: %d %v", len(l), err)
	}
	if l, _ := ns().List(ctx, 0); len(l) != 3 {
		t.Fatalf("list all: %d", len(l))
	}
	due, err := ns().Due(ctx, t0.Add(time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].ID != a.ID {
		t.Fatalf("due at +1h: %v %v", due, err)
	}
	if _, err := ns().SetEnabled(ctx, a.ID, false, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if due, _ := ns().Due(ctx, t0.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("a paused schedule is due: %v", due)
	}
	s, err := ns().SetEnabled(ctx, a.ID, true, t0.Add(2*time.Hour))
	if err != nil || !s.Enabled || !s.Next.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("resume: %+v %v", s, err)
	}
	if err := ns().Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ns().Get(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := ns().Delete(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if l, _ := ns().List(ctx, 1); len(l) != 1 {
		t.Fatalf("list after delete: %d", len(l))
	}
}

func TestStoreClaimCompleteReclaim(t *testing.T) { stores(t, storeClaim) }

func storeClaim(t *testing.T, ns func() Store) {
	ctx := context.Background()
	s := mk(t, 1, "every 1m", t0)
	if err := ns().Create(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	at := s.Next
	now := at.Add(10 * time.Millisecond)
	c := Claim{ID: s.ID, Expected: at, Next: at.Add(time.Minute), Job: BuildJob(s, at), At: at, Owner: "a", Lease: 10 * time.Second, Now: now}
	f, err := ns().Claim(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns().Claim(ctx, c); !errors.Is(err, ErrConflict) {
		t.Fatalf("second claim of the same fire: %v, want ErrConflict", err)
	}
	if n, _ := ns().Pending(ctx); n != 1 {
		t.Fatalf("pending %d, want 1", n)
	}
	if got, _ := ns().Reclaim(ctx, now.Add(9*time.Second), "b", time.Second, 10); len(got) != 0 {
		t.Fatalf("reclaimed before the lease ended: %v", got)
	}
	r, err := ns().Reclaim(ctx, now.Add(10*time.Second), "b", 10*time.Second, 10)
	if err != nil || len(r) != 1 || r[0].Token == f.Token || r[0].Job.IdempotencyKey != f.Job.IdempotencyKey || r[0].Reclaimed != 1 || !r[0].At.Equal(at) || r[0].ScheduleID != s.ID {
		t.Fatalf("reclaim: %+v %v", r, err)
	}
	if err := ns().Complete(ctx, f, FireResult{JobID: "j"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("complete with the old token: %v, want ErrConflict", err)
	}
	if err := ns().Complete(ctx, r[0], FireResult{JobID: "j1"}); err != nil {
		t.Fatal(err)
	}
	if err := ns().Complete(ctx, r[0], FireResult{JobID: "j1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("complete twice: %v", err)
	}
	got, _ := ns().Get(ctx, s.ID)
	if got.Fires != 1 || got.LastJobID != "j1" || got.LastStatus != StatusEnqueued || !got.Last.Equal(at) || !got.Next.Equal(at.Add(time.Minute)) {
		t.Fatalf("after complete: %+v", got)
	}
	if n, _ := ns().Pending(ctx); n != 0 {
		t.Fatalf("pending %d after complete", n)
	}
	// A claim without a job advances and records a miss.
	if _, err := ns().Claim(ctx, Claim{ID: s.ID, Expected: got.Next, Next: got.Next.Add(time.Hour), At: got.Next, Status: StatusMissed, Missed: 3, Now: now}); err != nil {
		t.Fatal(err)
	}
	got, _ = ns().Get(ctx, s.ID)
	if got.Misses != 3 || got.LastStatus != StatusMissed || !got.Next.Equal(at.Add(time.Minute+time.Hour)) {
		t.Fatalf("after a missed claim: %+v", got)
	}
	// A last fire disables; a disabled schedule cannot be claimed.
	if _, err := ns().Claim(ctx, Claim{ID: s.ID, Expected: got.Next, At: got.Next, Status: StatusMissed, Now: now}); err != nil {
		t.Fatal(err)
	}
	got, _ = ns().Get(ctx, s.ID)
	if got.Enabled || !got.Next.IsZero() {
		t.Fatalf("claim with no next left it enabled: %+v", got)
	}
	if _, err := ns().Claim(ctx, Claim{ID: s.ID, Expected: got.Next, At: t0, Status: StatusMissed, Now: now}); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of a disabled schedule: %v", err)
	}
	if _, err := ns().Claim(ctx, Claim{ID: "nope", At: t0, Now: now}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("claim of an unknown schedule: %v", err)
	}
	// A manual fire does not need or move next.
	mf, err := ns().Claim(ctx, Claim{ID: s.ID, Manual: true, Job: BuildJob(s, now), At: now, Owner: "cli", Lease: time.Second, Now: now})
	if err != nil || mf.Token == "" {
		t.Fatalf("manual claim: %v", err)
	}
	if err := ns().Complete(ctx, mf, FireResult{JobID: "m"}); err != nil {
		t.Fatal(err)
	}
	// A deleted schedule's pending fire still completes.
	s2 := mk(t, 1, "every 1m", t0)
	_ = ns().Create(ctx, s2, 0)
	f2, err := ns().Claim(ctx, Claim{ID: s2.ID, Expected: s2.Next, Next: s2.Next.Add(time.Minute), Job: BuildJob(s2, s2.Next), At: s2.Next, Owner: "a", Lease: time.Second, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns().Delete(ctx, s2.ID); err != nil {
		t.Fatal(err)
	}
	if err := ns().Complete(ctx, f2, FireResult{JobID: "x"}); err != nil {
		t.Fatalf("complete after delete: %v", err)
	}
}

// Many claimers racing for one fire: exactly one wins.
func TestStoreClaimRace(t *testing.T) { stores(t, storeRace) }

func storeRace(t *testing.T, ns func() Store) {
	ctx := context.Background()
	s := mk(t, 1, "every 1m", t0)
	if err := ns().Create(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		cur, _ := ns().Get(ctx, s.ID)
		var wins sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := 0; i < 8; i++ {
			wins.Add(1)
			go func() {
				defer wins.Done()
				_, err := ns().Claim(ctx, Claim{ID: s.ID, Expected: cur.Next, Next: cur.Next.Add(time.Minute), Job: BuildJob(s, cur.Next), At: cur.Next, Owner: "r", Lease: time.Second, Now: cur.Next})
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				} else if !errors.Is(err, ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wins.Wait()
		if won != 1 {
			t.Fatalf("round %d: %d claims won, want 1", round, won)
		}
	}
	if n, _ := ns().Pending(ctx); n != 5 {
		t.Fatalf("pending %d, want 5", n)
	}
}

// The per-chat limit holds under concurrent creates: it is checked in the
// same atomic step as the create.
func TestStoreLimitPerChatUnderRace(t *testing.T) { stores(t, storeLimit) }

func storeLimit(t *testing.T, ns func() Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, limited := 0, 0
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := ns().Create(ctx, mk(t, 77, "every 1m", t0), 5)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, ErrLimit) && strings.Contains(err.Error(), "5 schedules"):
				limited++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if l, _ := ns().List(ctx, 77); created != 5 || limited != 7 || len(l) != 5 {
		t.Fatalf("12 concurrent creates with a limit of 5: %d created, %d refused, %d stored", created, limited, len(l))
	}
}

// The store's scripts run on a real 3+3 Redis Cluster: every key of a
// script shares the queue's hash tag and is declared.
func TestStoreOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	t.Parallel() // its own cluster; mostly waiting for the cluster to form
	tp := queuetest.StartTopology(t, queue.ModeCluster)
	c := tp.Client()
	ns := func() Store { return NewRedis(c, "") }
	t.Run("crud", func(t *testing.T) { storeCRUD(t, ns) })
	t.Run("claim", func(t *testing.T) { storeClaim(t, ns) })
	t.Run("race", func(t *testing.T) { storeRace(t, ns) })
	t.Run("limit", func(t *testing.T) { storeLimit(t, ns) })
}

// Every script call passes its keys (a cluster routes by them, and a
// script may only touch keys it declared), and every key list is built
// from the store's own key names (the hash tag).
func TestEveryScriptCallDeclaresKeys(t *testing.T) {
	b, err := os.ReadFile("redis.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	calls := regexp.MustCompile(`Script\.(Run|EvalSha)\(ctx, [a-z.]+, ([^,]+),`).FindAllStringSubmatch(src, -1)
	if len(calls) < 10 {
		t.Fatalf("found %d script calls, want the 10 of redis.go", len(calls))
	}
	for _, c := range calls {
		if k := strings.TrimSpace(c[2]); k == "nil" || k == "[]string{}" {
			t.Errorf("script call without keys: %s", c[0])
		}
	}
	lists := regexp.MustCompile(`\[\]string\{([^}]*)\}`).FindAllStringSubmatch(src, -1)
	for _, l := range lists {
		for _, k := range strings.Split(l[1], ",") {
			if k = strings.TrimSpace(k); k != "" && !strings.HasPrefix(k, "r.k") {
				t.Errorf("key %q in %s is not one of the store's key names", k, l[0])
			}
		}
	}
	if strings.Contains(src, "r.p ..") || strings.Contains(src, "'sched:") {
		t.Error("a script builds a key name itself")
	}
}
