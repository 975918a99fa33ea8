package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
