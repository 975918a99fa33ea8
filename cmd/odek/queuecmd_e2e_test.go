package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// These tests run real `odek queue` processes against a real redis-server;
// the jobs' states are set up through the queue API directly.

const noLLM = "http://127.0.0.1:1/v1"

// queueCLI runs `odek queue args...` in e's environment with stdin.
func (e *queueEnv) queueCLI(stdin string, args ...string) runOut {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(e.t, ctx, noLLM, e.t.TempDir(), append([]string{"queue"}, args...)...)
	cmd.Env = append(cmd.Env, e.env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var so, se bintest.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	out := runOut{stdout: so.String(), stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		out.code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// jsonLines decodes every stdout line of out as one JSON object.
func jsonLines(t *testing.T, out runOut) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q is not one JSON object: %v (stderr %q)", line, err, out.stderr)
		}
		rows = append(rows, m)
	}
	return rows
}

func TestQueueCLIRedisUnreachable(t *testing.T) {
	env := []string{"REDIS_URL=redis://user:hunter2secret@127.0.0.1:1/0"}
	for _, args := range [][]string{{"queue", "stats"}, {"queue", "submit", "--chat", "1", "--key", "k", "hello"}, {"queue", "show", "abc"}} {
		out := runOdekEnv(t, noLLM, t.TempDir(), env, args...)
		if out.code != 69 || !strings.Contains(out.stderr, "odek "+strings.Join(args[:2], " ")) || !strings.Contains(out.stderr, "127.0.0.1:1") ||
			!strings.Contains(out.stderr, "connection refused") || strings.Contains(out.stderr, "hunter2secret") {
			t.Errorf("%v: exit %d, stderr %q; want 69 naming the command, the address and the cause, without the password", args, out.code, out.stderr)
		}
		if strings.Contains(out.stderr, "redis: 20") {
			t.Errorf("%v: a raw go-redis log line reached stderr: %q", args, out.stderr)
		}
	}
	// Flags that do nothing for a command are refused (exit 3).
	for _, args := range [][]string{{"queue", "stats", "--lease", "1s"}, {"queue", "submit", "--max-attempts", "2", "--chat", "1", "x"}} {
		if out := runOdekEnv(t, noLLM, t.TempDir(), env, args...); out.code != 3 || !strings.Contains(out.stderr, "flag provided but not defined") {
			t.Errorf("%v: exit %d, stderr %q; want 3 (unknown flag)", args, out.code, out.stderr)
		}
	}
}

func TestQueueCLIStatsShowWorkers(t *testing.T) {
	e := newQueueEnv(t, noLLM, false, 30*time.Second, 3)
	ctx := context.Background()
	a1 := e.enqueue(queue.Job{ChatID: 1, Goal: "first of chat 1\nsecond line is not shown"})
	a2 := e.enqueue(queue.Job{ChatID: 1, Goal: "second of chat 1"})
	b := e.enqueue(queue.Job{ChatID: 2, Goal: "chat 2 with key sk-AbCdEf1234567890abcdefGHIJKLmnop"})
	ls, err := e.q.Claim(ctx, "w-cli", 1, time.Second)
	if err != nil || len(ls) != 1 || ls[0].Job.ID != a1.ID {
		t.Fatalf("Claim = %+v, %v", ls, err)
	}
	if err := e.q.RegisterWorker(ctx, queue.WorkerInfo{Name: "w-cli", Version: "v9.9", Concurrency: 4, Running: 1, Started: time.Now()}, time.Minute); err != nil {
		t.Fatal(err)
	}

	out := e.queueCLI("", "stats", "--json")
	rows := jsonLines(t, out)
	if out.code != 0 || len(rows) != 1 {
		t.Fatalf("stats --json: %d %q %q", out.code, out.stdout, out.stderr)
	}
	st := rows[0]
	if st["queued"] != 2.0 || st["ready"] != 1.0 || st["running"] != 1.0 || st["running_by"].(map[string]any)["w-cli"] != 1.0 || st["dead"] != 0.0 {
		t.Fatalf("stats = %v; want 2 queued (one behind chat 1's running job), 1 ready, 1 running by w-cli", st)
	}
	if sc, ok := st["schedules"].(map[string]any); !ok || sc["schedules"] != 0.0 {
		t.Fatalf("stats without schedules: %v", st["schedules"])
	}
	if age, _ := st["oldest_queued_age_seconds"].(float64); age < 0 {
		t.Fatalf("oldest queued age %v", st["oldest_queued_age_seconds"])
	}
	if out := e.queueCLI("", "stats"); out.code != 0 || !strings.Contains(out.stdout, "queued\t2") || !strings.Contains(out.stdout, "worker w-cli\t1 running") {
		t.Fatalf("stats: %d %q", out.code, out.stdout)
	}

	out = e.queueCLI("", "show", "--json", a1.ID)
	rows = jsonLines(t, out)
	if out.code != 0 || len(rows) != 1 {
		t.Fatalf("show --json: %d %q %q", out.code, out.stdout, out.stderr)
	}
	s := rows[0]
	if s["state"] != "running" || s["worker"] != "w-cli" || s["chat_id"] != 1.0 || s["goal"] != "first of chat 1" || s["attempt"] != 1.0 {
		t.Fatalf("show a1 = %v", s)
	}
	if left, _ := s["lease_left_seconds"].(float64); left <= 0 || left > 30 {
		t.Fatalf("lease left %v, want within (0, 30]", s["lease_left_seconds"])
	}
	if out := e.queueCLI("", "show", a2.ID); out.code != 0 || !strings.Contains(out.stdout, "state\tqueued") {
		t.Fatalf("show a2: %d %q %q", out.code, out.stdout, out.stderr)
	}
	if out := e.queueCLI("", "show", "--json", b.ID); out.code != 0 || strings.Contains(out.stdout, "sk-AbCdEf1234567890") || !strings.Contains(out.stdout, `"state":"ready"`) {
		t.Fatalf("show b must be ready with its goal redacted: %d %q", out.code, out.stdout)
	}
	if out := e.queueCLI("", "show", "no-such-job"); out.code != 1 || !strings.Contains(out.stderr, "no-such-job") {
		t.Fatalf("show of an unknown job: %d %q", out.code, out.stderr)
	}

	out = e.queueCLI("", "workers", "--json")
	rows = jsonLines(t, out)
	if out.code != 0 || len(rows) != 1 || rows[0]["name"] != "w-cli" || rows[0]["version"] != "v9.9" || rows[0]["concurrency"] != 4.0 || rows[0]["running"] != 1.0 || rows[0]["leases"] != 1.0 {
		t.Fatalf("workers --json: %d %v %q", out.code, rows, out.stderr)
	}
	if out := e.queueCLI("", "workers"); out.code != 0 || !strings.Contains(out.stdout, "w-cli\tversion=v9.9\tconcurrency=4\trunning=1") {
		t.Fatalf("workers: %d %q", out.code, out.stdout)
	}

	if err := e.q.Ack(ctx, ls[0], queue.Result{Answer: "the answer\nmore", Artifacts: []queue.ArtifactMeta{{Path: "1/a.txt"}, {Path: "1/b.txt"}}, Usage: queue.Usage{PromptTokens: 12, CompletionTokens: 3}}); err != nil {
		t.Fatal(err)
	}
	out = e.queueCLI("", "show", "--json", a1.ID)
	rows = jsonLines(t, out)
	r, _ := rows[0]["result"].(map[string]any)
	if out.code != 0 || rows[0]["state"] != "done" || r == nil || r["status"] != "succeeded" || r["summary"] != "the answer" || r["artifacts"] != 2.0 {
		t.Fatalf("show of a finished job: %d %v", out.code, rows)
	}
	if out := e.queueCLI("", "cancel", "--json", a2.ID); out.code != 0 || !strings.Contains(out.stdout, `"cancel_requested":true`) {
		t.Fatalf("cancel --json: %d %q %q", out.code, out.stdout, out.stderr)
	}
	out = e.queueCLI("", "submit", "--chat", "7", "--json", "no key")
	if rows := jsonLines(t, out); out.code != 0 || len(rows) != 1 || rows[0]["job_id"] == "" || !strings.Contains(out.stderr, "no --key") {
		t.Fatalf("submit --json without --key: %d %q %q; want the id and a warning", out.code, out.stdout, out.stderr)
	}
}

// deadUntil lets every job the queue hands out die (never acknowledged)
// until n jobs are dead-lettered; each claim uses a new consumer, as a
// restarted worker would.
func deadUntil(t *testing.T, q *queue.Redis, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		if _, err := q.Claim(context.Background(), fmt.Sprintf("doomed%d", i), 10, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		st, err := q.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Dead >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters within 20s, want %d", st.Dead, n)
		}
	}
}

func TestQueueCLIDeadRetryPurge(t *testing.T) {
	e := newQueueEnv(t, noLLM, false, 100*time.Millisecond, 1)
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, e.enqueue(queue.Job{ChatID: int64(100 + i), Goal: fmt.Sprintf("poison %d", i)}).ID)
	}
	deadUntil(t, e.q, 4)

	out := e.queueCLI("", "dead", "--json")
	rows := jsonLines(t, out)
	if out.code != 0 || len(rows) != 4 {
		t.Fatalf("dead --json: %d %q %q", out.code, out.stdout, out.stderr)
	}
	if rows[0]["attempts"] != 2.0 || rows[0]["strikes"] != 1.0 || rows[0]["dead_at"] == "" || len(rows[0]["history"].([]any)) != 2 {
		t.Fatalf("dead entry %v; want 2 attempts, 1 strike, a time and 2 history lines", rows[0])
	}
	out = e.queueCLI("", "retry", "--json", ids[0])
	if rows := jsonLines(t, out); out.code != 0 || len(rows) != 1 || rows[0]["dead_id"] != ids[0] || rows[0]["job_id"] == ids[0] {
		t.Fatalf("retry --json: %d %q %q", out.code, out.stdout, out.stderr)
	}
	if out := e.queueCLI("n\n", "retry", "--all"); out.code != 1 || !strings.Contains(out.stderr, "Retry all 3") || !strings.Contains(out.stderr, "not confirmed") {
		t.Fatalf("retry --all answered n: %d %q", out.code, out.stderr)
	}
	if out := e.queueCLI("", "retry", "--all"); out.code != 1 { // no answer at all (EOF) is no
		t.Fatalf("retry --all without an answer: %d %q", out.code, out.stderr)
	}
	if out := e.queueCLI("", "retry", "--yes", ids[1]); out.code != 3 {
		t.Fatalf("retry --yes ID: %d, want 3 (--yes only with --all)", out.code)
	}
	if out := e.queueCLI("", "purge-dead", "--older-than", "1h", "--json"); out.code != 0 || strings.TrimSpace(out.stdout) != `{"purged":0}` {
		t.Fatalf("purge-dead --older-than 1h: %d %q %q", out.code, out.stdout, out.stderr)
	}
	if out := e.queueCLI("", "purge-dead"); out.code != 3 || !strings.Contains(out.stderr, "--older-than") {
		t.Fatalf("purge-dead without --older-than: %d %q", out.code, out.stderr)
	}
	if out := e.queueCLI("", "purge-dead", "--older-than", "0s", "--json"); out.code != 0 || strings.TrimSpace(out.stdout) != `{"purged":3}` {
		t.Fatalf("purge-dead --older-than 0s: %d %q %q", out.code, out.stdout, out.stderr)
	}
	// The retried copy of ids[0] dies too; retry --all --yes requeues it.
	deadUntil(t, e.q, 1)
	out = e.queueCLI("", "retry", "--all", "--yes", "--json")
	if rows := jsonLines(t, out); out.code != 0 || len(rows) != 1 {
		t.Fatalf("retry --all --yes --json: %d %q %q", out.code, out.stdout, out.stderr)
	}
	if out := e.queueCLI("y\n", "retry", "--all"); out.code != 0 || !strings.Contains(out.stderr, "no dead-lettered jobs") {
		t.Fatalf("retry --all with nothing dead: %d %q", out.code, out.stderr)
	}
	if out := e.queueCLI("", "dead", "--json"); out.code != 0 || strings.TrimSpace(out.stdout) != "" {
		t.Fatalf("dead after retry: %d %q", out.code, out.stdout)
	}
}

func TestQueueCLITail(t *testing.T) {
	e := newQueueEnv(t, noLLM, false, 30*time.Second, 3)
	ctx := context.Background()
	j := e.enqueue(queue.Job{ChatID: 5, Goal: "tail me"})
	ls, err := e.q.Claim(ctx, "w-tail", 1, time.Second)
	if err != nil || len(ls) != 1 {
		t.Fatal(len(ls), err)
	}
	ev := `{"schema":"odek.event/v1","type":"tool_call_started","seq":2,"run_id":"r1","iteration":1,"tool":"shell","timestamp":"2026-08-07T12:00:01.2Z","data":{"call_id":"c1"}}`
	sum := `{"schema":"odek.progress/v1","job_id":"` + j.ID + `","state":"running","iteration":1,"tool_calls":1,"last_tool":"shell","elapsed_ms":5}`
	for _, p := range []string{ev, sum} {
		if err := e.q.PublishProgress(ctx, j.ID, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	// Follow every running job: the lines appear while the job runs.
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := odekCmd(t, tctx, noLLM, t.TempDir(), "queue", "tail")
	all.Env = append(all.Env, e.env...)
	pr, err := all.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := all.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	want := []string{j.ID + " tool_call_started iteration=1 tool=shell", j.ID + " progress state=running iteration=1 tool_calls=1"}
	for _, w := range want {
		select {
		case l := <-lines:
			if !strings.Contains(l, w) {
				t.Fatalf("tail line %q, want it to contain %q", l, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no tail line within 10s; want %q", w)
		}
	}
	// One job: tail ID exits when the job ends, with its final line.
	done := make(chan runOut, 1)
	go func() { done <- e.queueCLI("", "tail", "--json", j.ID) }()
	if err := e.q.Ack(ctx, ls[0], queue.Result{Answer: "ok"}); err != nil {
		t.Fatal(err)
	}
	var out runOut
	select {
	case out = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("tail ID did not exit within 20s of the job's end")
	}
	rows := jsonLines(t, out)
	if out.code != 0 || len(rows) != 3 || rows[0]["job_id"] != j.ID || rows[0]["event"].(map[string]any)["type"] != "tool_call_started" ||
		rows[2]["finished"].(map[string]any)["status"] != "succeeded" {
		t.Fatalf("tail --json ID: %d %v %q", out.code, rows, out.stderr)
	}
	select {
	case l := <-lines:
		if !strings.Contains(l, j.ID+" finished status=succeeded") {
			t.Fatalf("all-jobs tail after the end: %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("all-jobs tail printed no final line")
	}
	cancel()
	_ = all.Wait()
	if out := e.queueCLI("", "tail", "unknown-job"); out.code != 1 {
		t.Fatalf("tail of an unknown job: %d %q", out.code, out.stderr)
	}
}

// The first worker stores the lease and max attempts; a worker whose
// explicit flag disagrees refuses to start, one without flags adopts them;
// a worker started while Redis is down waits for it, logging each retry
// through logrus.
func TestWorkerSharedConfigAndWaitForRedis(t *testing.T) {
	srv := queuetest.StartServer(t, queuetest.ServerOptions{AOF: true}) // the stored config survives the restart
	e := &queueEnv{t: t, srv: srv, llm: noLLM, home: t.TempDir()}
	e.env = []string{"REDIS_URL=redis://" + srv.Addr + "/0", "ODEK_HOME=" + e.home}
	if out := e.queueCLI("", "config", "--json"); out.code != 0 || strings.TrimSpace(out.stdout) != `{"stored":false}` {
		t.Fatalf("config before any worker: %d %q %q", out.code, out.stdout, out.stderr)
	}
	if out := e.queueCLI("", "config", "--lease", "5s", "--max-attempts", "4", "--json"); out.code != 0 || !strings.Contains(out.stdout, `"lease_seconds":5,"max_attempts":4`) {
		t.Fatalf("config --lease 5s --max-attempts 4: %d %q %q", out.code, out.stdout, out.stderr)
	}
	w := e.startWorker("clash", "--lease", "2s")
	if code := w.waitExit(t, 20*time.Second); code != 3 || !strings.Contains(w.stderr.String(), "--lease 2s (the queue's is 5s)") {
		t.Fatalf("worker with a clashing --lease: exit %d\n%s", code, w.stderr.String())
	}
	srv.Kill()
	w = e.startWorker("patient")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(w.stderr.String(), "attempt=2") {
		if time.Now().After(deadline) {
			t.Fatalf("worker logged no second retry while Redis was down:\n%s", w.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Restart()
	for !strings.Contains(w.stderr.String(), "waiting for jobs") {
		if time.Now().After(deadline) {
			t.Fatalf("worker did not start once Redis was back:\n%s", w.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := w.stderr.String()
	if !strings.Contains(log, "Redis unreachable") || !strings.Contains(log, srv.Addr) || !strings.Contains(log, "using the queue's shared lease") {
		t.Fatalf("worker log lacks the retry lines naming %s or the adopted config:\n%s", srv.Addr, log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "redis: ") {
			t.Fatalf("raw go-redis log line on stderr: %q", line)
		}
	}
}

// A queue in the old key layout ("odek:jobs") is refused with a pointer to
// `odek queue migrate`, which moves it once; a second run moves nothing.
func TestQueueCLIMigrate(t *testing.T) {
	e := newQueueEnv(t, noLLM, false, 30*time.Second, 3)
	ctx := context.Background()
	j := e.enqueue(queue.Job{ChatID: 1, Goal: "before the migration"})
	rc := e.srv.Client()
	keys, err := rc.Keys(ctx, "{odek}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := rc.Rename(ctx, k, "odek:"+strings.TrimPrefix(k, "{odek}:")).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if out := e.queueCLI("", "stats"); out.code == 0 || !strings.Contains(out.stderr, "odek queue migrate") {
		t.Fatalf("stats on the old layout: exit %d, stderr %q; want a failure naming odek queue migrate", out.code, out.stderr)
	}
	out := e.queueCLI("", "migrate", "--json")
	rows := jsonLines(t, out)
	if out.code != 0 || len(rows) != 1 || rows[0]["moved"] != float64(len(keys)) {
		t.Fatalf("migrate: exit %d, %q %q; want %d moved", out.code, out.stdout, out.stderr, len(keys))
	}
	out = e.queueCLI("", "migrate", "--json")
	if rows := jsonLines(t, out); out.code != 0 || rows[0]["moved"] != float64(0) {
		t.Fatalf("second migrate: exit %d, %q", out.code, out.stdout)
	}
	out = e.queueCLI("", "show", "--json", j.ID)
	if rows := jsonLines(t, out); out.code != 0 || rows[0]["state"] != queue.StateReady {
		t.Fatalf("show after migrate: exit %d, %q %q", out.code, out.stdout, out.stderr)
	}
}
