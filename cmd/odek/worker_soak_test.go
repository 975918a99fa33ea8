//go:build soak

package main_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// TestSoak is the queue's chaos soak: real `odek worker` processes at
// concurrency > 1 against a real redis-server with AOF (appendfsync
// always), random SIGKILLs of workers (a supervisor restarts them under a
// new name, as a restart policy would), one SIGKILL and restart of Redis,
// poison jobs whose model call kills the worker running them, and duplicate
// submits of the same update. It asserts: no job lost, no second result
// for any job, only the poison jobs dead-lettered, every duplicate submit
// deduplicated, and each chat's jobs started in submit order.
//
//	go test -tags soak -run Soak ./cmd/odek/                     # short form (CI, under 2 minutes)
//	ODEK_SOAK_JOBS=1000 ODEK_SOAK_CHATS=50 ODEK_SOAK_KILLS=200 go test -tags soak -run Soak -timeout 30m ./cmd/odek/
//
// Knobs (environment): ODEK_SOAK_JOBS (default 150), ODEK_SOAK_CHATS (20),
// ODEK_SOAK_WORKERS (3), ODEK_SOAK_CONCURRENCY (4), ODEK_SOAK_POISON (2),
// ODEK_SOAK_KILLS (most random worker kills, one every 2–4 s until every
// result is in; 40).
//
// MaxAttempts is 4 here: a random kill that lands on a worker while it runs
// a healthy suspect alone counts against that job (the queue cannot tell
// such a kill from a poison job), so a healthy job could in principle be
// dead-lettered by MaxAttempts unlucky kills in a row. With kills every 2–4
// s over 3 workers and lone runs of ~0.5 s that is about 0.07^4 per
// suspect, far below one in a thousand runs.
func TestSoak(t *testing.T) {
	var (
		jobs    = envN("ODEK_SOAK_JOBS", 200)
		chats   = envN("ODEK_SOAK_CHATS", 20)
		workers = envN("ODEK_SOAK_WORKERS", 3)
		conc    = envN("ODEK_SOAK_CONCURRENCY", 4)
		poisonN = envN("ODEK_SOAK_POISON", 2)
		kills   = envN("ODEK_SOAK_KILLS", 40)
		lease   = time.Second
	)
	srv := queuetest.StartServer(t, queuetest.ServerOptions{AOF: true})
	q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{LeaseTTL: lease, MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := &soak{t: t, procs: map[string]*exec.Cmd{}, starts: map[int64][]int{}}
	llm := llmtest.NewHandler(t, s.model)
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each worker gets its own base URL, /<worker name>/v1, so the
		// model knows whom a poison job is killing.
		name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		r.Header.Set("X-Soak-Worker", name)
		r.URL.Path = "/" + rest
		llm.Handler().ServeHTTP(w, r)
	})
	fsrv := &http.Server{Handler: front}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = fsrv.Serve(ln) }()
	t.Cleanup(func() { _ = fsrv.Close() })
	s.llmBase = "http://" + ln.Addr().String()
	s.env = []string{"REDIS_URL=redis://" + srv.Addr + "/0", "ODEK_QUEUE_LEASE=1s", "ODEK_QUEUE_MAX_ATTEMPTS=4"}
	s.conc = conc

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var sup sync.WaitGroup
	for i := 0; i < workers; i++ {
		sup.Add(1)
		go func() { defer sup.Done(); s.supervise(ctx, i) }()
	}
	defer func() { stop(); sup.Wait() }()

	// Submit: jobs spread over chats, every 10th submitted twice with the
	// same idempotency key, poison jobs in chats of their own.
	t0 := time.Now()
	want := map[string]string{} // job id -> goal
	poison := map[string]bool{}
	seq := map[int64]int{}
	dups := 0
	for n := 0; n < jobs; n++ {
		chat := int64(1 + n%chats)
		seq[chat]++
		goal := fmt.Sprintf("chat %d seq %d", chat, seq[chat])
		key := "update-" + strconv.Itoa(n)
		j, dup, err := q.Enqueue(context.Background(), queue.Job{ChatID: chat, Goal: goal, IdempotencyKey: key})
		if err != nil || dup {
			t.Fatalf("Enqueue %d = dup %v, %v", n, dup, err)
		}
		want[j.ID] = goal
		if n%10 == 0 {
			again, dup, err := q.Enqueue(context.Background(), queue.Job{ChatID: chat, Goal: goal, IdempotencyKey: key})
			if err != nil || !dup || again.ID != j.ID {
				t.Fatalf("duplicate submit %d = %s dup %v, %v; want %s dup true", n, again.ID, dup, err, j.ID)
			}
			dups++
		}
		if n == jobs/3 && poisonN > 0 {
			for p := 0; p < poisonN; p++ {
				pj, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: int64(9000 + p), Goal: fmt.Sprintf("POISON %d", p)})
				if err != nil {
					t.Fatal(err)
				}
				poison[pj.ID] = true
			}
		}
	}
	submitted := time.Since(t0)

	// Chaos: random worker kills every 2–4 s, and Redis killed and
	// restarted once, after the second kill.
	chaos := make(chan struct{})
	go func() {
		defer close(chaos)
		for k := 0; k < kills; k++ {
			if !sleepOrDone(ctx, time.Duration(2000+rand.IntN(2000))*time.Millisecond) {
				return
			}
			s.killRandom()
			if k == 1 {
				srv.Restart()
				s.mu.Lock()
				s.redisRestarts++
				s.mu.Unlock()
			}
		}
	}()

	got := map[string]queue.Result{}
	deadline := time.Now().Add(10 * time.Minute)
	for len(got) < len(want)+len(poison) && time.Now().Before(deadline) {
		ds, err := q.ReadResults(context.Background(), "soak-frontend", 100, 200*time.Millisecond)
		if err != nil {
			continue // Redis restarting
		}
		for _, d := range ds {
			if prev, dup := got[d.Result.JobID]; dup {
				t.Errorf("second result for job %s: %+v (first %+v)", d.Result.JobID, d.Result, prev)
			}
			got[d.Result.JobID] = d.Result
			for q.AckResult(context.Background(), d) != nil {
				time.Sleep(50 * time.Millisecond) // Redis restarting
			}
		}
	}
	elapsed := time.Since(t0)
	stop()
	<-chaos
	sup.Wait()

	lost, failed := 0, 0
	for id, goal := range want {
		r, ok := got[id]
		switch {
		case !ok:
			lost++
			t.Errorf("job %s (%s) lost: no result", id, goal)
		case r.Status != queue.StatusSucceeded || r.Answer != "done: "+goal:
			failed++
			t.Errorf("job %s (%s): %s %q %q, want succeeded", id, goal, r.Status, r.Answer, r.Error)
		}
	}
	for id := range poison {
		if r := got[id]; r.Status != queue.StatusDeadLettered {
			t.Errorf("poison job %s: %+v, want dead_lettered", id, r)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok && !poison[id] {
			t.Errorf("result for a job never submitted: %s", id)
		}
	}
	dead, err := q.DeadLetters(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if !poison[d.ID] {
			t.Errorf("healthy job %s (%s) dead-lettered", d.ID, d.Goal)
		}
	}
	if len(dead) != len(poison) {
		t.Errorf("%d dead letters, want the %d poison jobs", len(dead), len(poison))
	}
	s.mu.Lock()
	for chat, ss := range s.starts {
		for i := 1; i < len(ss); i++ {
			if ss[i] < ss[i-1] {
				t.Errorf("chat %d started its jobs in the order %v: seq %d after seq %d", chat, ss, ss[i], ss[i-1])
				break
			}
		}
	}
	reruns := s.calls - len(want) - len(poison)
	t.Logf("soak: %d jobs in %d chats + %d poison, %d duplicate submits, %d workers × concurrency %d, lease %v",
		len(want), chats, len(poison), dups, workers, conc, lease)
	t.Logf("soak: submitted in %v; all results after %v (%.1f jobs/s); %d worker deaths (%d by poison, %d random kills), %d Redis restarts; %d model calls (%d reruns); lost %d, failed %d, duplicates 0 unless reported, dead letters %d",
		submitted.Round(time.Millisecond), elapsed.Round(time.Millisecond), float64(len(want))/elapsed.Seconds(),
		s.deaths, s.poisonKills, s.randomKills, s.redisRestarts, s.calls, reruns, lost, failed, len(dead))
	s.mu.Unlock()
}

type soak struct {
	t       *testing.T
	llmBase string
	env     []string
	conc    int

	mu                                      sync.Mutex
	procs                                   map[string]*exec.Cmd // live workers by name
	starts                                  map[int64][]int      // chat -> seq of each model request, in arrival order
	calls, deaths, poisonKills, randomKills int
	redisRestarts                           int
}

// model answers healthy jobs after 200–800 ms and kills the worker that
// sent a poison job's request.
func (s *soak) model(r llmtest.Recorded) llmtest.Turn {
	// A job taken over after its goal was saved asks with the resume note
	// (host.JobGoal); its goal is the user message before it.
	goal := ""
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == llm.RoleUser && m.Content != host.ResumeNote {
			goal = m.Content
			break
		}
	}
	s.mu.Lock()
	s.calls++
	var chat int64
	var n int
	if _, err := fmt.Sscanf(goal, "chat %d seq %d", &chat, &n); err == nil {
		s.starts[chat] = append(s.starts[chat], n)
	}
	if strings.HasPrefix(goal, "POISON") {
		if p := s.procs[r.Header.Get("X-Soak-Worker")]; p != nil {
			_ = p.Process.Signal(syscall.SIGKILL)
			s.poisonKills++
		}
	}
	s.mu.Unlock()
	time.Sleep(time.Duration(200+rand.IntN(600)) * time.Millisecond) // the model's latency
	return llmtest.Reply("done: " + goal)
}

func (s *soak) killRandom() {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.procs))
	for n := range s.procs {
		names = append(names, n)
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	_ = s.procs[names[rand.IntN(len(names))]].Process.Signal(syscall.SIGKILL)
	s.randomKills++
}

// supervise keeps worker slot i running until ctx ends, restarting it
// under a new name after each death.
func (s *soak) supervise(ctx context.Context, i int) {
	for gen := 1; ctx.Err() == nil; gen++ {
		name := fmt.Sprintf("soak%d-%d", i, gen)
		home := s.t.TempDir()
		cmd := exec.Command(odekBin, "worker", "--name", name, "--concurrency", strconv.Itoa(s.conc), "--log-level", "warn")
		cmd.Dir = home
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ODEK_HOME=" + home,
			"ODEK_BASE_URL=" + s.llmBase + "/" + name + "/v1", "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef"}, s.env...)
		var se bintest.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			s.t.Errorf("start worker: %v", err)
			return
		}
		s.mu.Lock()
		s.procs[name] = cmd
		s.mu.Unlock()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
		select {
		case err = <-exited:
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			err = <-exited
		}
		s.mu.Lock()
		delete(s.procs, name)
		if ctx.Err() == nil {
			s.deaths++
		}
		s.mu.Unlock()
		if ctx.Err() == nil && !strings.Contains(fmt.Sprint(err), "killed") {
			s.t.Errorf("worker %s exited by itself (%v):\n%s", name, err, se.String())
		}
	}
}

func envN(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 0 {
		return n
	}
	return def
}

func sleepOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
