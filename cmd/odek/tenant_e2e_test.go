package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// One worker serves two chats. Chat A's job writes a file in its
// directory; chat B's jobs try every route to it, to the worker's secrets
// and to Redis; each fails, and the model sees a clear error.
func TestWorkerTenantsAreIsolated(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	model := sandboxtest.NewModel()
	srv := llmtest.NewHandler(t, model.Handle)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--metrics-addr", "127.0.0.1:0")
	dirA := filepath.Join(artifacts, "1")
	_, redisPort, _ := strings.Cut(e.srv.Addr, ":")
	model.SetRoutes(sandboxtest.Routes(dirA, e.home, w.cmd.Process.Pid, redisPort))

	a := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: sandboxtest.WriteGoal, IdempotencyKey: "a1"})
	if res := e.results(60*time.Second, a.ID)[a.ID]; res.Status != queue.StatusSucceeded {
		t.Fatalf("chat A's job: %+v\n%s", res, w.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dirA, "notes.txt")); err != nil || string(b) != sandboxtest.Secret {
		t.Fatalf("chat A's file: %q %v", b, err)
	}

	// The planted link must exist before the job that reads it.
	p := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "plant a link", IdempotencyKey: "b-plant"})
	e.results(60*time.Second, p.ID)
	var ids []string
	for name := range model.Routes() {
		if name == "plant a link" {
			continue
		}
		j := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: name, IdempotencyKey: "b-" + name})
		ids = append(ids, j.ID)
	}
	for id, res := range e.results(120*time.Second, ids...) {
		if strings.Contains(res.Answer, sandboxtest.Secret) {
			t.Errorf("job %s answered with chat A's secret: %q", id, res.Answer)
		}
	}
	model.Check(t, dirA)
	checkHealthSandbox(t, w)
}

// checkHealthSandbox reads the worker's /healthz and checks it reports an
// active sandbox with the kernel's Landlock ABI.
func checkHealthSandbox(t *testing.T, w *workerProc) {
	t.Helper()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`addr="?(127\.0\.0\.1:\d+)`).FindStringSubmatch(w.stderr.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no metrics address logged:\n%s", w.stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var h struct {
		Status  string `json:"status"`
		Sandbox struct {
			Active      bool `json:"active"`
			LandlockABI int  `json:"landlock_abi"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" || !h.Sandbox.Active || h.Sandbox.LandlockABI != sandbox.ABI() {
		t.Fatalf("/healthz = %s (%v)", body, err)
	}
	if !strings.Contains(w.stderr.String(), "landlock_abi") {
		t.Errorf("the start-up log does not report the Landlock ABI:\n%s", w.stderr.String())
	}
}

// odek run --confine: the working directory is the root; a file beside it
// is out of reach for the file tools and the shell, and run_started says
// the run is sandboxed. Without --confine the same run reads it.
func TestRunConfine(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	base := t.TempDir()
	work := filepath.Join(base, "project")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "beside.txt"), []byte(sandboxtest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	script := func() *llmtest.Server {
		return llmtest.New(t,
			llmtest.CallTools(
				llmtest.Call{ID: "r", Name: "read_file", Arguments: `{"path":"../beside.txt"}`},
				llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"cat ../beside.txt"}`},
			),
			llmtest.Reply("done"))
	}
	srv := script()
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	// The default policy would deny the shell without a terminal; allow
	// it, so that the sandbox is what stops cat.
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := []string{"ODEK_HOME=" + home}
	out := runOdekEnv(t, srv.URL, work, cfg, "run", "--confine", "--quiet", "--events-jsonl", evPath, "read the secret")
	if out.code != 0 {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].Messages
	var results []string
	for _, m := range last {
		if m.Role == llm.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || strings.Contains(strings.Join(results, ""), sandboxtest.Secret) ||
		!strings.Contains(results[0], "outside this job's root") || !strings.Contains(results[1], "Permission denied") {
		t.Fatalf("confined results: %q", results)
	}
	evs := readEvents(t, evPath)
	if evs[0].Type != "run_started" || evs[0].Data["sandbox"] != true {
		t.Fatalf("run_started = %+v", evs[0])
	}

	srv = script()
	out = runOdekEnv(t, srv.URL, work, cfg, "run", "--quiet", "read the secret")
	reqs = srv.Requests()
	if out.code != 0 || !strings.Contains(fmt.Sprint(reqs[len(reqs)-1].Messages), sandboxtest.Secret) {
		t.Fatalf("unconfined run did not read the file beside it (exit %d): the test proves nothing\n%s", out.code, out.stderr)
	}

	// A root holding ODEK_HOME is refused: the run could read its config.
	out = runOdekEnv(t, "http://127.0.0.1:1/v1", base, []string{"ODEK_HOME=" + filepath.Join(base, "project", ".odek")}, "run", "--confine", "x")
	if out.code != 3 || !strings.Contains(out.stderr, "root contains a path the sandbox must not grant") {
		t.Fatalf("root holding ODEK_HOME: exit %d\n%s", out.code, out.stderr)
	}
}
