package main_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// These tests run real `odek worker` and `odek queue` processes against a
// real redis-server and the fake LLM. Every wait is a poll with a deadline.

type workerProc struct {
	name   string
	cmd    *exec.Cmd
	stderr *bintest.Buffer
	exited chan struct{}
	err    error
}

// queueEnv is the environment shared by workers and queue commands of one
// test: the Redis URL and a short lease so takeovers happen within a test.
type queueEnv struct {
	t     *testing.T
	srv   *queuetest.Server
	llm   string
	home  string
	env   []string
	q     *queue.Redis
	lease time.Duration
	bin   string // the odek binary workers run; odekBin when ""
}

func newQueueEnv(t *testing.T, llmURL string, aof bool, lease time.Duration, maxAttempts int) *queueEnv {
	t.Helper()
	srv := queuetest.StartServer(t, queuetest.ServerOptions{AOF: aof})
	e := &queueEnv{t: t, srv: srv, llm: llmURL, home: t.TempDir(), lease: lease}
	e.env = []string{
		"REDIS_URL=redis://" + srv.Addr + "/0",
		"ODEK_HOME=" + e.home,
		fmt.Sprintf("ODEK_QUEUE_LEASE=%gs", lease.Seconds()),
		fmt.Sprintf("ODEK_QUEUE_MAX_ATTEMPTS=%d", maxAttempts),
	}
	q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{LeaseTTL: lease, MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	e.q = q
	return e
}

// startWorker starts `odek worker --name name` with extra args; it is
// killed when the test ends.
func (e *queueEnv) startWorker(name string, args ...string) *workerProc {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := odekCmd(e.t, ctx, e.llm, e.t.TempDir(), append([]string{"worker", "--name", name, "--log-level", "debug"}, args...)...)
	cmd.Env = append(cmd.Env, e.env...)
	if e.bin != "" {
		cmd.Path, cmd.Args[0] = e.bin, e.bin
	}
	w := &workerProc{name: name, cmd: cmd, stderr: &bintest.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { w.err = cmd.Wait(); close(w.exited) }()
	e.t.Cleanup(func() {
		cancel()
		<-w.exited
		if e.t.Failed() {
			e.t.Logf("worker %s stderr:\n%s", name, w.stderr.String())
		}
	})
	return w
}

func (w *workerProc) kill(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
}

// waitExit waits for the process and returns its exit code.
func (w *workerProc) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-w.exited:
	case <-time.After(within):
		t.Fatalf("worker %s did not exit within %v\n%s", w.name, within, w.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(w.err, &ee) {
		return ee.ExitCode()
	}
	if w.err != nil {
		t.Fatalf("worker %s: %v", w.name, w.err)
	}
	return 0
}

func (e *queueEnv) enqueue(j queue.Job) queue.Job {
	e.t.Helper()
	got, _, err := e.q.Enqueue(context.Background(), j)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// results collects every result published until want job ids all have one
// or the deadline passes, acknowledging them, and fails on a second result
// for any job.
func (e *queueEnv) results(within time.Duration, want ...string) map[string]queue.Result {
	e.t.Helper()
	got := map[string]queue.Result{}
	deadline := time.Now().Add(within)
	missing := func() bool {
		for _, id := range want {
			if _, ok := got[id]; !ok {
				return true
			}
		}
		return false
	}
	for missing() && time.Now().Before(deadline) {
		e.drainResults(got, 200*time.Millisecond)
	}
	if missing() {
		e.t.Fatalf("results for %d of %d jobs within %v: %+v", len(got), len(want), within, got)
	}
	return got
}

func (e *queueEnv) drainResults(got map[string]queue.Result, block time.Duration) {
	e.t.Helper()
	ds, err := e.q.ReadResults(context.Background(), "test-frontend", 100, block)
	if err != nil {
		return // Redis restarting
	}
	for _, d := range ds {
		if prev, dup := got[d.Result.JobID]; dup {
			e.t.Fatalf("second result for job %s: %+v (first %+v)", d.Result.JobID, d.Result, prev)
		}
		got[d.Result.JobID] = d.Result
		if err := e.q.AckResult(context.Background(), d); err != nil {
			e.t.Fatal(err)
		}
	}
}

// holderOf polls the queue until some worker holds job id and returns its
// consumer name.
func (e *queueEnv) holderOf(names ...string) string {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err := e.q.Stats(context.Background())
		if err != nil {
			continue
		}
		for _, n := range names {
			if st.RunningBy[n] > 0 {
				return n
			}
		}
	}
	e.t.Fatal("no worker took the job within 20s")
	return ""
}

// gate is a fake-LLM behaviour: requests whose goal contains a held word
// block until released; every other request is answered "done: <goal>".
type gate struct {
	mu      sync.Mutex
	hold    map[string]chan struct{}
	arrived chan string // goal of each held request as it arrives
	calls   map[string]int
	order   []string // last user message of every request, in arrival order
}

func newGate() *gate {
	return &gate{hold: map[string]chan struct{}{}, arrived: make(chan string, 64), calls: map[string]int{}}
}

func (g *gate) holdWord(w string) {
	g.mu.Lock()
	g.hold[w] = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) release(w string) {
	g.mu.Lock()
	if c, ok := g.hold[w]; ok {
		close(c)
		delete(g.hold, w)
	}
	g.mu.Unlock()
}

func (g *gate) handle(r llmtest.Recorded) llmtest.Turn {
	goal := r.LastMessage().Content
	g.mu.Lock()
	g.calls[goal]++
	g.order = append(g.order, goal)
	var wait chan struct{}
	for w, c := range g.hold {
		if strings.Contains(goal, w) {
			wait = c
		}
	}
	g.mu.Unlock()
	if wait != nil {
		g.arrived <- goal
		select {
		case <-wait:
		case <-time.After(60 * time.Second):
		}
	}
	return llmtest.Reply("done: " + goal)
}

func (g *gate) callsFor(goal string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[goal]
}

func startGate(t *testing.T) (*gate, *llmtest.Server) {
	g := newGate()
	srv := llmtest.NewHandler(t, g.handle)
	t.Cleanup(func() {
		g.mu.Lock()
		for w, c := range g.hold {
			close(c)
			delete(g.hold, w)
		}
		g.mu.Unlock()
	})
	return g, srv
}

func waitArrived(t *testing.T, g *gate, within time.Duration) string {
	t.Helper()
	select {
	case goal := <-g.arrived:
		return goal
	case <-time.After(within):
		t.Fatalf("no held model request within %v", within)
		return ""
	}
}

func TestWorkerNeedsRedis(t *testing.T) {
	out := runOdek(t, "http://127.0.0.1:1/v1", t.TempDir(), "worker")
	if out.code != 3 || !strings.Contains(out.stderr, "REDIS_URL") {
		t.Fatalf("exit %d, stderr %q; want 3 naming REDIS_URL", out.code, out.stderr)
	}
	out = runOdekEnv(t, "http://127.0.0.1:1/v1", t.TempDir(), []string{"REDIS_URL=redis://user:hunter2secret@127.0.0.1:1/0"}, "queue", "stats")
	if out.code == 0 || strings.Contains(out.stderr, "hunter2secret") {
		t.Fatalf("exit %d, stderr %q: want a failure that does not echo the password", out.code, out.stderr)
	}
}

// Submit with --wait prints the answer; the chat's second job continues
// the first one's session (loaded from Redis by whichever worker runs it);
// a duplicate submit of one update is one job; metrics count the jobs.
func TestWorkerSubmitWaitSessionsDedupeMetrics(t *testing.T) {
	g, llm := startGate(t)
	e := newQueueEnv(t, llm.URL, false, 2*time.Second, 3)
	w := e.startWorker("w1", "--metrics-addr", "127.0.0.1:0")
	e.startWorker("w2")

	out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "42", "--wait", "first question")
	if out.code != 0 || out.stdout != "done: first question\n" {
		t.Fatalf("submit --wait: exit %d stdout %q stderr %s", out.code, out.stdout, out.stderr)
	}
	out = runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "42", "--wait", "second question")
	if out.code != 0 || out.stdout != "done: second question\n" {
		t.Fatalf("second submit: exit %d stdout %q stderr %s", out.code, out.stdout, out.stderr)
	}
	reqs := llm.Requests()
	last := reqs[len(reqs)-1].Messages
	var history []string
	for _, m := range last {
		history = append(history, m.Content)
	}
	if !strings.Contains(strings.Join(history, "|"), "first question|done: first question|second question") {
		t.Fatalf("second job did not continue the chat's session: %q", history)
	}

	// One Telegram update submitted twice is one job.
	a := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "43", "--key", "update-77", "dedupe me")
	b := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "43", "--key", "update-77", "dedupe me")
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout || strings.TrimSpace(a.stdout) == "" {
		t.Fatalf("duplicate submit: %q (%d) vs %q (%d), stderr %s", a.stdout, a.code, b.stdout, b.code, b.stderr)
	}
	id := strings.TrimSpace(a.stdout)
	res := e.results(20*time.Second, id)
	if res[id].Status != queue.StatusSucceeded {
		t.Fatalf("deduped job result %+v", res[id])
	}
	for deadline := time.Now().Add(5 * time.Second); g.callsFor("dedupe me") == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if n := g.callsFor("dedupe me"); n != 1 {
		t.Fatalf("the model saw the deduped goal %d times, want 1", n)
	}

	m := regexp.MustCompile(`addr="?(127\.0\.0\.1:\d+)`).FindStringSubmatch(w.stderr.String())
	if m == nil {
		t.Fatalf("worker did not log its metrics address:\n%s", w.stderr.String())
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get("http://" + m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if path == "/metrics" && (!strings.Contains(string(body), "odek_worker_jobs_started_total") || !strings.Contains(string(body), "odek_queue_depth 0")) {
			t.Fatalf("metrics:\n%s", body)
		}
	}
}

// A worker SIGKILLed mid-job: the other worker takes the job over after the
// lease, completes it once, and exactly one result is published.
func TestWorkerSIGKILLMidJob(t *testing.T) {
	g, llm := startGate(t)
	g.holdWord("survive")
	e := newQueueEnv(t, llm.URL, false, time.Second, 3)
	workers := map[string]*workerProc{"w1": e.startWorker("w1"), "w2": e.startWorker("w2")}
	j := e.enqueue(queue.Job{ChatID: 7, Goal: "survive the crash"})
	waitArrived(t, g, 20*time.Second)
	victim := e.holderOf("w1", "w2")
	workers[victim].kill(t)
	g.release("survive")
	res := e.results(20*time.Second, j.ID)[j.ID]
	if res.Status != queue.StatusSucceeded || res.Attempt != 2 || res.Answer != "done: survive the crash" {
		t.Fatalf("result %+v, want succeeded at attempt 2", res)
	}
	// Nothing more arrives for it (another takeover would publish a second result).
	e.drainResults(map[string]queue.Result{j.ID: res}, 1500*time.Millisecond)
	if n := g.callsFor("survive the crash"); n != 2 {
		t.Fatalf("model calls for the job: %d, want 2 (killed run + takeover)", n)
	}
}

// A poison job — one whose run takes its worker process down every time —
// is dead-lettered after --max-attempts deaths alone (its first death may
// have been beside other jobs, so that one is not counted: 3 claims for
// --max-attempts 2); the chat is told and its
// next job runs; `odek queue dead` lists it and `odek queue retry` requeues
// it. (A panic inside a tool is caught by the agent and never reaches the
// worker; what the queue protects against is a run that kills the process:
// OOM kill, a fatal runtime error, a crash of the host. The test plays that
// part with SIGKILL.)
func TestWorkerPoisonJobDeadLettered(t *testing.T) {
	g, llm := startGate(t)
	g.holdWord("poison")
	e := newQueueEnv(t, llm.URL, false, 500*time.Millisecond, 2)
	poison := e.enqueue(queue.Job{ChatID: 9, Goal: "poison pill"})
	next := e.enqueue(queue.Job{ChatID: 9, Goal: "after the poison"})
	for i := 1; i <= 3; i++ {
		w := e.startWorker(fmt.Sprintf("crash%d", i))
		waitArrived(t, g, 20*time.Second)
		w.kill(t)
	}
	g.release("poison")
	e.startWorker("survivor")
	res := e.results(20*time.Second, poison.ID, next.ID)
	if r := res[poison.ID]; r.Status != queue.StatusDeadLettered || r.Attempt != 3 {
		t.Fatalf("poison result %+v, want dead_lettered after 3 attempts", r)
	}
	if r := res[next.ID]; r.Status != queue.StatusSucceeded || r.Answer != "done: after the poison" {
		t.Fatalf("next job of the chat %+v", r)
	}
	out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "dead")
	if out.code != 0 || !strings.Contains(out.stdout, poison.ID) || !strings.Contains(out.stdout, "attempts=3") {
		t.Fatalf("queue dead: %d %q %s", out.code, out.stdout, out.stderr)
	}
	out = runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "stats", "--json")
	if out.code != 0 || !strings.Contains(out.stdout, `"dead":1`) {
		t.Fatalf("queue stats: %d %q %s", out.code, out.stdout, out.stderr)
	}
	out = runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "retry", poison.ID)
	retried := strings.TrimSpace(out.stdout)
	if out.code != 0 || retried == "" || retried == poison.ID {
		t.Fatalf("queue retry: %d %q %s", out.code, out.stdout, out.stderr)
	}
	if r := e.results(20*time.Second, retried)[retried]; r.Status != queue.StatusSucceeded {
		t.Fatalf("retried job %+v", r)
	}
	if out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "retry", poison.ID); out.code != 1 {
		t.Fatalf("second retry: exit %d, want 1", out.code)
	}
}

// Redis restarted (AOF on) while a job runs and others wait: every job
// completes exactly once.
func TestWorkerRedisRestartLosesNoJob(t *testing.T) {
	g, llm := startGate(t)
	g.holdWord("during")
	e := newQueueEnv(t, llm.URL, true, 2*time.Second, 5)
	e.startWorker("w1", "--concurrency", "2")
	held := e.enqueue(queue.Job{ChatID: 1, Goal: "running during the restart"})
	var ids []string
	ids = append(ids, held.ID)
	waitArrived(t, g, 20*time.Second)
	for i := range 4 {
		ids = append(ids, e.enqueue(queue.Job{ChatID: 2, Goal: fmt.Sprintf("queued %d", i)}).ID)
	}
	e.srv.Restart()
	g.release("during")
	for i := range 3 {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			j, _, err := e.q.Enqueue(context.Background(), queue.Job{ChatID: 3, Goal: fmt.Sprintf("after %d", i)})
			if err == nil {
				ids = append(ids, j.ID)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("enqueue after restart: %v", err)
			}
		}
	}
	res := e.results(40*time.Second, ids...)
	for _, id := range ids {
		if res[id].Status != queue.StatusSucceeded {
			t.Fatalf("job %s: %+v", id, res[id])
		}
	}
	e.drainResults(res, time.Second)
}

// Four workers, two chats with ten jobs each: every chat's jobs reach the
// model in submission order.
func TestWorkerPerChatOrderUnderFourWorkers(t *testing.T) {
	g, llm := startGate(t)
	e := newQueueEnv(t, llm.URL, false, 5*time.Second, 3)
	for i := range 4 {
		e.startWorker(fmt.Sprintf("w%d", i), "--concurrency", "2")
	}
	var ids []string
	for i := range 10 {
		for _, chat := range []int64{100, 200} {
			ids = append(ids, e.enqueue(queue.Job{ChatID: chat, Goal: fmt.Sprintf("chat%d-job%02d", chat, i)}).ID)
		}
	}
	e.results(60*time.Second, ids...)
	g.mu.Lock()
	order := append([]string(nil), g.order...)
	g.mu.Unlock()
	for _, chat := range []string{"chat100-", "chat200-"} {
		var seq []string
		for _, goal := range order {
			if strings.HasPrefix(goal, chat) {
				seq = append(seq, goal)
			}
		}
		for i, goal := range seq {
			if want := fmt.Sprintf("%sjob%02d", chat, i); goal != want {
				t.Fatalf("%s order %v: position %d is %s, want %s", chat, seq, i, goal, want)
			}
		}
		if len(seq) != 10 {
			t.Fatalf("%s: %d model requests, want 10", chat, len(seq))
		}
	}
}

// `odek queue cancel` stops a running job within a heartbeat; the waiting
// `odek queue submit --wait` exits 130 like a canceled `odek run`.
func TestWorkerCancelRunningJob(t *testing.T) {
	g, llm := startGate(t)
	g.holdWord("forever")
	e := newQueueEnv(t, llm.URL, false, 5*time.Second, 3)
	e.startWorker("w1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub := odekCmd(t, ctx, llm.URL, t.TempDir(), "queue", "submit", "--chat", "5", "--wait", "run forever")
	sub.Env = append(sub.Env, e.env...)
	var so, se bintest.Buffer
	sub.Stdout, sub.Stderr = &so, &se
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	waitArrived(t, g, 20*time.Second)
	m := regexp.MustCompile(`odek: job ([0-9a-f]{32})`).FindStringSubmatch(se.String())
	if m == nil {
		t.Fatalf("submit did not print the job id: %q", se.String())
	}
	t0 := time.Now()
	if out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "cancel", m[1]); out.code != 0 {
		t.Fatalf("cancel: %d %s", out.code, out.stderr)
	}
	err := sub.Wait()
	t.Logf("cancel → submit --wait exit: %v", time.Since(t0))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("submit --wait: %v, stderr %s", err, se.String())
	}
	res, ok, err := e.q.JobResult(context.Background(), m[1])
	if err != nil || !ok || res.Status != queue.StatusCanceled {
		t.Fatalf("result %+v %v %v", res, ok, err)
	}
	if out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "cancel", m[1]); out.code != 1 {
		t.Fatalf("cancel of a finished job: exit %d, want 1", out.code)
	}
}

// SIGTERM: the worker stops claiming, lets the running job finish, acks it
// and exits 0. With a short --shutdown-timeout a job that does not finish
// is canceled and left for redelivery to the next worker.
func TestWorkerGracefulSIGTERM(t *testing.T) {
	g, llm := startGate(t)
	g.holdWord("drain")
	e := newQueueEnv(t, llm.URL, false, time.Second, 3)
	w := e.startWorker("w1", "--shutdown-timeout", "60s")
	j := e.enqueue(queue.Job{ChatID: 1, Goal: "drain me"})
	waitArrived(t, g, 20*time.Second)
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(w.stderr.String(), "stopped claiming"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("worker did not log the signal:\n%s", w.stderr.String())
		}
	}
	later := e.enqueue(queue.Job{ChatID: 2, Goal: "enqueued after SIGTERM"})
	g.release("drain")
	if code := w.waitExit(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exit %d\n%s", code, w.stderr.String())
	}
	if r := e.results(10*time.Second, j.ID)[j.ID]; r.Status != queue.StatusSucceeded || r.Attempt != 1 {
		t.Fatalf("drained job %+v", r)
	}
	if n := g.callsFor("enqueued after SIGTERM"); n != 0 {
		t.Fatalf("a draining worker claimed a new job (%d model calls)", n)
	}

	// Shutdown timeout: the held job is canceled and left for redelivery.
	g.holdWord("stuck")
	w2 := e.startWorker("w2", "--shutdown-timeout", "200ms")
	if r := e.results(20*time.Second, later.ID)[later.ID]; r.Status != queue.StatusSucceeded {
		t.Fatalf("job enqueued during the drain, run by the next worker: %+v", r)
	}
	stuck := e.enqueue(queue.Job{ChatID: 3, Goal: "stuck job"})
	waitArrived(t, g, 20*time.Second)
	_ = w2.cmd.Process.Signal(syscall.SIGTERM)
	if code := w2.waitExit(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exit %d\n%s", code, w2.stderr.String())
	}
	if _, ok, _ := e.q.JobResult(context.Background(), stuck.ID); ok {
		t.Fatal("the canceled job got a result; it should wait for redelivery")
	}
	g.release("stuck")
	e.startWorker("w3")
	if r := e.results(20*time.Second, stuck.ID)[stuck.ID]; r.Status != queue.StatusSucceeded || r.Attempt != 2 {
		t.Fatalf("redelivered job %+v, want succeeded at attempt 2", r)
	}
}

// rssKiB reads a process's resident set size from /proc.
func rssKiB(pid int) float64 { return procStatusKiB(pid, "VmRSS") }

// procStatusKiB reads one "<field>: N kB" line of /proc/<pid>/status; 0
// when it cannot.
func procStatusKiB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(field + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	return n
}

// BenchmarkWorkerMemory reports the resident memory of a real `odek
// worker --concurrency 8` process idle (after 1 s of waiting for jobs) and
// with 8 jobs running (each held inside its model call).
func BenchmarkWorkerMemory(b *testing.B) {
	srv := queuetest.StartServer(b, queuetest.ServerOptions{})
	g := newGate()
	g.holdWord("hold")
	llm := llmtest.NewHandler(b, g.handle)
	b.Cleanup(func() { g.release("hold") })
	q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var idle, busy float64
	for i := 0; i < b.N; i++ {
		home := b.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, odekBin, "worker", "--concurrency", "8", "--name", "mem"+strconv.Itoa(i))
		cmd.Dir = home
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ODEK_HOME=" + home, "ODEK_BASE_URL=" + llm.URL,
			"ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef", "REDIS_URL=redis://" + srv.Addr}
		var se bintest.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(se.String(), "waiting for jobs"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("worker did not start: %s", se.String())
			}
		}
		time.Sleep(time.Second) // idle is the state measured
		idle += rssKiB(cmd.Process.Pid)
		for j := range 8 {
			if _, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: int64(1000*i + j + 1), Goal: fmt.Sprintf("hold %d-%d", i, j)}); err != nil {
				b.Fatal(err)
			}
		}
		for range 8 {
			select {
			case <-g.arrived:
			case <-time.After(20 * time.Second):
				b.Fatalf("8 jobs did not reach the model: %s", se.String())
			}
		}
		busy += rssKiB(cmd.Process.Pid)
		g.release("hold")
		g.holdWord("hold")
		cancel()
		_ = cmd.Wait()
	}
	b.ReportMetric(idle/float64(b.N)/1024, "idle-RSS-MiB")
	b.ReportMetric(busy/float64(b.N)/1024, "8-jobs-RSS-MiB")
}

// A tool call the policy marks "prompt" reaches the chat as an approval
// question over Redis; the chat's "allow" lets it run. A file the job
// writes in the chat's directory comes back as artifact metadata.
func TestWorkerApprovalAndArtifacts(t *testing.T) {
	llm := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "w", Name: "write_file", Arguments: `{"path":"report.md","content":"# findings"}`}),
		llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"python3 -c 'print(6*7)'"}`}),
		llmtest.Reply("report written"),
	)
	e := newQueueEnv(t, llm.URL, false, 5*time.Second, 3)
	art := t.TempDir()
	e.startWorker("w1", "--artifacts", art, "--approval-timeout", "30s")
	j := e.enqueue(queue.Job{ChatID: 77, Goal: "write a report"})
	var asked []queue.Approval
	for deadline := time.Now().Add(20 * time.Second); len(asked) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no approval question within 20s")
		}
		asked, _ = e.q.ReadApprovals(context.Background(), "test-frontend", 1, 200*time.Millisecond)
	}
	if asked[0].JobID != j.ID || asked[0].ChatID != 77 || !strings.Contains(asked[0].Question, "python3") {
		t.Fatalf("approval %+v", asked[0])
	}
	if err := e.q.Answer(context.Background(), asked[0].ID, true); err != nil {
		t.Fatal(err)
	}
	res := e.results(20*time.Second, j.ID)[j.ID]
	if res.Status != queue.StatusSucceeded || res.Answer != "report written" {
		t.Fatalf("result %+v", res)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path != filepath.Base(chatDir(t, art, 77))+"/report.md" || res.Artifacts[0].Bytes != int64(len("# findings")) {
		t.Fatalf("artifacts %+v", res.Artifacts)
	}
	reqs := llm.Requests()
	toolMsg := reqs[2].Messages[len(reqs[2].Messages)-1].Content
	if strings.Contains(toolMsg, "declined") || strings.Contains(toolMsg, "denied") {
		t.Fatalf("approved call was not run: %q", toolMsg)
	}
}
