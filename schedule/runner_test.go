package schedule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// countQueue counts the enqueues that stored a new job, per idempotency
// key, across every runner that shares it.
type countQueue struct {
	q     queue.Queue
	mu    sync.Mutex
	fresh map[string]int // enqueues that did not report a duplicate
	calls map[string]int // successful enqueue calls
	dups  int
}

func newCount(q queue.Queue) *countQueue {
	return &countQueue{q: q, fresh: map[string]int{}, calls: map[string]int{}}
}

// queued is the number of unfinished jobs the queue itself counts.
func queued(t *testing.T, q queue.Queue) int {
	t.Helper()
	st, err := q.(queue.Operator).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Queued)
}

func (c *countQueue) Enqueue(ctx context.Context, j queue.Job) (queue.Job, bool, error) {
	s, dup, err := c.q.Enqueue(ctx, j)
	if err == nil {
		c.mu.Lock()
		c.calls[j.IdempotencyKey]++
		if dup {
			c.dups++
		} else {
			c.fresh[j.IdempotencyKey]++
		}
		c.mu.Unlock()
	}
	return s, dup, err
}

func (c *countQueue) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.fresh {
		n += v
	}
	return n
}

// env is one store kind with its queue: several "processes" (newStore,
// newQueue called once each) share the state.
type env struct {
	newStore func() Store
	newQueue func() queue.Queue
	rc       func() redis.UniversalClient
}

func envs(t *testing.T, f func(t *testing.T, e env)) {
	t.Run("file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "schedules.json")
		mq := queue.NewMemory(queue.Options{})
		f(t, env{newStore: func() Store { return NewFile(p) }, newQueue: func() queue.Queue { return mq }})
	})
	t.Run("redis", func(t *testing.T) {
		srv := queuetest.StartServer(t, queuetest.ServerOptions{})
		e := env{rc: func() redis.UniversalClient { return srv.Client() }}
		e.newStore = func() Store { return NewRedis(srv.Client(), "") }
		e.newQueue = func() queue.Queue {
			q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		f(t, e)
	})
}

// N runners (each with its own store and queue client, as N processes)
// tick at the same moments over 30 fire times of 20 schedules: every
// fire time's job is enqueued exactly once.
func TestRunnerReplicasFireEachOnce(t *testing.T) {
	// Its own file, queue and server; the longest test of the package (the
	// file store rewrites and fsyncs the whole file on every change), so
	// the others run beside it.
	t.Parallel()
	envs(t, func(t *testing.T, e env) {
		ctx := context.Background()
		clk := &clock{t: t0}
		var scheds []Schedule
		st := e.newStore()
		for i := 0; i < 20; i++ {
			s := mk(t, int64(100+i), "every 1s", t0)
			if err := st.Create(ctx, s, 0); err != nil {
				t.Fatal(err)
			}
			scheds = append(scheds, s)
		}
		cq := newCount(e.newQueue())
		var runners []*Runner
		for i := 0; i < 4; i++ {
			q := e.newQueue()
			runners = append(runners, &Runner{Store: e.newStore(), Queue: &sharedCount{c: cq, q: q}, Name: fmt.Sprint("r", i), Now: clk.Now, Parallel: 3})
		}
		const steps = 30
		for step := 0; step < steps; step++ {
			clk.Add(time.Second)
			var wg sync.WaitGroup
			for _, r := range runners {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := r.Tick(ctx); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
		}
		for _, s := range scheds {
			for k := 1; k <= steps; k++ {
				key := FireKey(s, t0.Add(time.Duration(k)*time.Second))
				if n := cq.fresh[key]; n != 1 {
					t.Fatalf("fire %s enqueued %d times, want 1", key, n)
				}
			}
			got, _ := st.Get(ctx, s.ID)
			if got.Fires != steps || got.Misses != 0 {
				t.Fatalf("schedule %s: %d fires %d misses, want %d and 0", s.ID, got.Fires, got.Misses, steps)
			}
		}
		if n := cq.total(); n != 20*steps {
			t.Fatalf("%d jobs enqueued, want %d", n, 20*steps)
		}
		if n := queued(t, e.newQueue()); n != 20*steps {
			t.Fatalf("the queue holds %d jobs, want %d", n, 20*steps)
		}
		var conflicts int64
		for _, r := range runners {
			conflicts += r.Stats().Conflicts.Load()
		}
		t.Logf("%d fires, %d lost claims among 4 runners", 20*steps, conflicts)
		if e.rc != nil {
			// The queue itself holds one idempotency key per fire.
			for _, s := range scheds {
				n, err := e.rc().Exists(ctx, "{odek}:idem:"+FireKey(s, t0.Add(steps*time.Second))).Result()
				if err != nil || n != 1 {
					t.Fatalf("idempotency key of the last fire of %s: %d %v", s.ID, n, err)
				}
			}
		}
	})
}

type sharedCount struct {
	c *countQueue
	q queue.Queue
}

func (s *sharedCount) Enqueue(ctx context.Context, j queue.Job) (queue.Job, bool, error) {
	st, dup, err := s.q.Enqueue(ctx, j)
	if err == nil {
		s.c.mu.Lock()
		if dup {
			s.c.dups++
		} else {
			s.c.fresh[j.IdempotencyKey]++
		}
		s.c.mu.Unlock()
	}
	return st, dup, err
}

// A runner that dies after its claim, before or after the enqueue, leaves
// the fire pending; another runner takes it over after the lease and the
// fire's job exists exactly once.
func TestRunnerCrashBetweenClaimAndEnqueue(t *testing.T) {
	for _, afterEnqueue := range []bool{false, true} {
		t.Run(fmt.Sprint("enqueued=", afterEnqueue), func(t *testing.T) {
			envs(t, func(t *testing.T, e env) {
				ctx := context.Background()
				clk := &clock{t: t0}
				s := mk(t, 5, "every 1m", t0)
				if err := e.newStore().Create(ctx, s, 0); err != nil {
					t.Fatal(err)
				}
				cq := newCount(e.newQueue())
				dead := &Runner{Store: e.newStore(), Queue: cq, Name: "dead", Now: clk.Now, Lease: 30 * time.Second}
				dead.afterClaim = func(f Fire) bool {
					if afterEnqueue {
						if _, _, err := cq.Enqueue(ctx, f.Job); err != nil {
							t.Error(err)
						}
					}
					return false // the process dies here
				}
				clk.Set(s.Next.Add(100 * time.Millisecond))
				if _, err := dead.Tick(ctx); err != nil {
					t.Fatal(err)
				}
				st := e.newStore()
				if n, _ := st.Pending(ctx); n != 1 {
					t.Fatalf("pending %d after the crash, want 1", n)
				}
				next := &Runner{Store: e.newStore(), Queue: cq, Name: "next", Now: clk.Now, Lease: 30 * time.Second}
				clk.Add(29 * time.Second)
				if n, err := next.Tick(ctx); err != nil || n != 0 {
					t.Fatalf("tick within the lease fired %d (%v)", n, err)
				}
				clk.Add(time.Second)
				if n, err := next.Tick(ctx); err != nil || n != 1 {
					t.Fatalf("tick after the lease fired %d (%v), want 1", n, err)
				}
				if n, _ := st.Pending(ctx); n != 0 {
					t.Fatalf("pending %d after the takeover", n)
				}
				key := FireKey(s, s.Next)
				calls := 1
				if afterEnqueue {
					calls = 2
				}
				if cq.calls[key] != calls {
					t.Fatalf("enqueue calls: %v, want %d for %s", cq.calls, calls, key)
				}
				if n := queued(t, cq.q); n != 1 {
					t.Fatalf("the queue holds %d jobs, want 1", n)
				}
				got, _ := st.Get(ctx, s.ID)
				if got.Fires != 1 || got.LastJobID != JobID(s, s.Next) || next.Stats().Reclaimed.Load() != 1 {
					t.Fatalf("after the takeover: %+v, reclaimed %d", got, next.Stats().Reclaimed.Load())
				}
			})
		})
	}
}

// The same with a real process: a child runner SIGKILLs itself right
// after its claim; a runner started after it fires the job once.
func TestRunnerProcessKilledAfterClaim(t *testing.T) {
	if os.Getenv("SCHED_CHILD_REDIS") != "" {
		return
	}
	srv := queuetest.StartServer(t, queuetest.ServerOptions{AOF: true})
	ctx := context.Background()
	st := NewRedis(srv.Client(), "")
	now := time.Now()
	s := mk(t, 5, "every 1m", now.Add(-time.Minute-time.Second)) // due a second ago
	if err := st.Create(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunnerChildKillsItself$", "-test.v")
	cmd.Env = append(os.Environ(), "SCHED_CHILD_REDIS="+srv.Addr)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	if n, _ := st.Pending(ctx); n != 1 {
		t.Fatalf("pending %d after the kill, want 1\n%s", n, out)
	}
	srv.Restart() // and Redis restarts too, from its AOF
	q, err := queue.NewRedis(ctx, srv.Client(), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cq := newCount(q)
	r := &Runner{Store: NewRedis(srv.Client(), ""), Queue: cq, Name: "after", Lease: 200 * time.Millisecond}
	deadline := time.Now().Add(20 * time.Second)
	for cq.total() == 0 && time.Now().Before(deadline) {
		if _, err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // polling for the child's lease to end
	}
	if cq.total() != 1 || cq.fresh[FireKey(s, s.Next)] != 1 {
		t.Fatalf("after restart: %v, want one job for %s", cq.fresh, FireKey(s, s.Next))
	}
	if l, ok, err := q.Inspect(ctx, JobID(s, s.Next)); err != nil || !ok || l.Job.IdempotencyKey != FireKey(s, s.Next) {
		t.Fatalf("the queue's job: %+v %v %v", l, ok, err)
	}
}

func TestRunnerChildKillsItself(t *testing.T) {
	addr := os.Getenv("SCHED_CHILD_REDIS")
	if addr == "" {
		t.Skip("child of TestRunnerProcessKilledAfterClaim")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	q, err := queue.NewRedis(context.Background(), c, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Store: NewRedis(c, ""), Queue: q, Name: "child", Lease: 200 * time.Millisecond}
	r.afterClaim = func(Fire) bool {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	_, _ = r.Tick(context.Background())
	t.Fatal("no due schedule claimed")
}

func TestDecideMissedPolicies(t *testing.T) {
	for _, tc := range []struct {
		name, spec, tz string
		policy         MissedPolicy
		created, now   string
		fire           bool
		at, next       string
		missed         int64
		status         FireStatus
	}{
		{"on time", "every 1m", "", MissedSkip, "2026-12-02T10:00:00Z", "2026-12-02T10:01:00.3Z", true, "2026-12-02T10:01:00Z", "2026-12-02T10:02:00Z", 0, ""},
		{"within grace, two folded", "every 20s", "", MissedSkip, "2026-12-02T10:00:00Z", "2026-12-02T10:00:59Z", true, "2026-12-02T10:00:20Z", "2026-12-02T10:01:00Z", 1, ""},
		{"down 10m, skip", "every 1m", "", MissedSkip, "2026-12-02T10:00:00Z", "2026-12-02T10:10:30Z", false, "2026-12-02T10:01:00Z", "2026-12-02T10:11:00Z", 10, StatusMissed},
		{"down 10m, run once", "every 1m", "", MissedRunOnce, "2026-12-02T10:00:00Z", "2026-12-02T10:10:30Z", true, "2026-12-02T10:01:00Z", "2026-12-02T10:11:00Z", 9, ""},
		{"daily, down 3 days, run once", "0 9 * * *", "Europe/Berlin", MissedRunOnce, "2026-12-01T12:00:00Z", "2026-12-04T12:00:00Z", true, "2026-12-02T08:00:00Z", "2026-12-05T08:00:00Z", 2, ""},
		{"daily, down 3 days, skip", "0 9 * * *", "Europe/Berlin", MissedSkip, "2026-12-01T12:00:00Z", "2026-12-04T12:00:00Z", false, "2026-12-02T08:00:00Z", "2026-12-05T08:00:00Z", 3, StatusMissed},
		{"one-shot late, run once", "at 2026-12-02T11:00:00Z", "", MissedRunOnce, "2026-12-02T10:00:00Z", "2026-12-03T10:00:00Z", true, "2026-12-02T11:00:00Z", "", 0, ""},
		{"one-shot late, skip", "at 2026-12-02T11:00:00Z", "", MissedSkip, "2026-12-02T10:00:00Z", "2026-12-03T10:00:00Z", false, "2026-12-02T11:00:00Z", "", 1, StatusMissed},
	} {
		created := mustTime(t, tc.created)
		s, sp, err := Prepare(Schedule{ChatID: 1, Spec: tc.spec, TZ: tc.tz, Text: "x", Missed: tc.policy}, Limits{MinInterval: time.Second}, created)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		now, _ := time.Parse(time.RFC3339Nano, tc.now)
		d := Decide(s, sp, now, time.Minute)
		var next time.Time
		if tc.next != "" {
			next = mustTime(t, tc.next)
		}
		if d.Fire != tc.fire || !d.At.Equal(mustTime(t, tc.at)) || !d.Next.Equal(next) || d.Missed != tc.missed || d.Status != tc.status {
			t.Errorf("%s: %+v\nwant fire %v at %s next %s missed %d status %q", tc.name, d, tc.fire, tc.at, tc.next, tc.missed, tc.status)
		}
	}
}

// After downtime the runner applies the policy once, then fires on time.
func TestRunnerCatchUpAfterDowntime(t *testing.T) {
	for _, policy := range []MissedPolicy{MissedSkip, MissedRunOnce} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := context.Background()
			st := NewFile("")
			cq := newCount(queue.NewMemory(queue.Options{}))
			clk := &clock{t: t0.Add(10*time.Minute + 30*time.Second)}
			s, _, err := Prepare(Schedule{ChatID: 1, Spec: "every 1m", Text: "x", Missed: policy}, Limits{}, t0)
			if err != nil {
				t.Fatal(err)
			}
			_ = st.Create(ctx, s, 0)
			r := &Runner{Store: st, Queue: cq, Now: clk.Now}
			n, err := r.Tick(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := st.Get(ctx, s.ID)
			want := 0
			if policy == MissedRunOnce {
				want = 1
			}
			if n != want || cq.total() != want || !got.Next.Equal(t0.Add(11*time.Minute)) {
				t.Fatalf("catch-up fired %d (%d jobs), next %s", n, cq.total(), got.Next)
			}
			clk.Set(t0.Add(11 * time.Minute))
			if n, _ := r.Tick(ctx); n != 1 {
				t.Fatalf("the next on-time fire: %d", n)
			}
			got, _ = st.Get(ctx, s.ID)
			if got.Misses+got.Fires != 11 {
				t.Fatalf("fires %d + misses %d, want 11 fire times in all", got.Fires, got.Misses)
			}
		})
	}
}

func TestRunnerActiveHours(t *testing.T) {
	ctx := context.Background()
	cq := newCount(queue.NewMemory(queue.Options{}))
	clk := &clock{t: t0}
	sv := &Service{Store: NewFile(""), Now: clk.Now}
	owner := Owner{ChatID: 3, UserID: 4}
	night, err := sv.Create(ctx, owner, Schedule{Spec: "0 * * * *", Text: "look", ActiveHours: "08:00-20:00", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Store: sv.Store, Queue: cq, Now: clk.Now}
	for h := 11; h <= 21; h++ {
		clk.Set(time.Date(2026, 12, 2, h, 0, 0, 0, time.UTC))
		if _, err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := sv.Store.Get(ctx, night.ID)
	if cq.total() != 9 || got.Fires != 9 || got.LastStatus != StatusInactive || r.Stats().Inactive.Load() != 2 {
		t.Fatalf("11:00..21:00 with active hours 08:00-20:00: %d jobs, %+v", cq.total(), got)
	}
	if k := FireKey(night, t0); k[len(k)-3:] != ":gq" {
		t.Fatalf("quiet key %s", k)
	}
}

func TestOneShotFiresOnceAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "s.json")
	cq := newCount(queue.NewMemory(queue.Options{}))
	clk := &clock{t: t0}
	sv := &Service{Store: NewFile(p), Now: clk.Now}
	s, err := sv.Create(ctx, Owner{ChatID: 3, UserID: 4}, Schedule{Spec: "in 2h", Text: "renew the domain", Kind: KindMessage})
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range []time.Duration{time.Hour, 2*time.Hour + time.Second, 3 * time.Hour, 48 * time.Hour} {
		clk.Set(t0.Add(at))
		r := &Runner{Store: NewFile(p), Queue: cq, Now: clk.Now, Name: "p" + strconv.Itoa(i)}
		if _, err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if cq.total() != 1 || cq.fresh[FireKey(s, t0.Add(2*time.Hour))] != 1 {
		t.Fatalf("one-shot fired %v", cq.fresh)
	}
	got, _ := NewFile(p).Get(ctx, s.ID)
	if got.Enabled || got.Fires != 1 || got.LastStatus != StatusEnqueued {
		t.Fatalf("%+v", got)
	}
}

func TestParseFireKey(t *testing.T) {
	s := Schedule{ID: "abc123", Kind: KindMessage, Quiet: true}
	at := time.UnixMilli(1764669600123).UTC()
	fi, ok := ParseFireKey(FireKey(s, at))
	if !ok || fi.ScheduleID != "abc123" || !fi.At.Equal(at) || !fi.Message || !fi.Quiet {
		t.Fatalf("%+v %v", fi, ok)
	}
	for _, k := range []string{"", "telegram:1:2", "sched:abc:1:x", "sched:ABC:1:g", "sched:abc:x:g", "sched:abc:1:g:extra"} {
		if _, ok := ParseFireKey(k); ok {
			t.Errorf("%q parsed as a fire key", k)
		}
	}
}
