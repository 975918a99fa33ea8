package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// A job's processes end with the job, through a real `odek worker` and
// real Redis: chat 1's job leaves a background, a nohup, a setsid and a
// double-forked sleep behind; once its result is in, none of them lives.
// Chat 2's job, running alongside, keeps its process through chat 1's
// end and completes normally. A third job tries TCP Fast Open to the real
// Redis port and gets an error, not +PONG.
func TestWorkerJobEndsItsProcesses(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	marker := fmt.Sprintf("%d.%06d7", 6000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	var redisPort string
	var mu sync.Mutex
	seen := map[string]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) > 0 {
			mu.Lock()
			seen[g] = res[0]
			mu.Unlock()
			return llmtest.Reply("done")
		}
		var cmd string
		switch g {
		case "survivors":
			cmd = sandboxtest.SurvivorScript(marker)
		case "wait":
			// Runs until the test lets it go, across chat 1's job end.
			cmd = "touch running; while [ ! -e go ]; do sleep 0.05; done; echo other-ok"
		case "fast open":
			mu.Lock()
			cmd = sandboxtest.FastOpenPing(redisPort)
			mu.Unlock()
		default:
			return llmtest.Reply("unknown goal " + g)
		}
		return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: fmt.Sprintf(`{"command":%q,"timeout_seconds":60}`, cmd)})
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	_, port, _ := strings.Cut(e.srv.Addr, ":")
	mu.Lock()
	redisPort = port
	mu.Unlock()
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--concurrency", "2")
	t.Cleanup(func() {
		// Whatever the outcome, leave nothing running.
		for _, pid := range sandboxtest.Alive(t, marker) {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	})

	wait := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "wait", IdempotencyKey: "w"})
	running := filepath.Join(chatDir(t, artifacts, 2), "running")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(running); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat 2's command never started\n%s", w.stderr.String())
		}
	}

	s := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "survivors", IdempotencyKey: "s"})
	if res := e.results(60*time.Second, s.ID)[s.ID]; res.Status != queue.StatusSucceeded {
		t.Fatalf("chat 1's job: %+v\n%s", res, w.stderr.String())
	}
	mu.Lock()
	out := seen["survivors"]
	mu.Unlock()
	if !strings.Contains(out, "started") {
		t.Fatalf("the survivors' script did not run: %q", out)
	}
	if pids := sandboxtest.WaitGone(t, marker, 10*time.Second); len(pids) > 0 {
		t.Errorf("chat 1's processes outlived its job: %v", pids)
	}

	if err := os.WriteFile(filepath.Join(chatDir(t, artifacts, 2), "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res := e.results(60*time.Second, wait.ID)[wait.ID]
	mu.Lock()
	out = seen["wait"]
	mu.Unlock()
	if res.Status != queue.StatusSucceeded || !strings.Contains(out, "exit code: 0") || !strings.Contains(out, "other-ok") {
		t.Errorf("chat 2's job after chat 1's end: %+v\n%s", res, out)
	}

	f := e.enqueue(queue.Job{ChatID: 3, UserID: 3, Goal: "fast open", IdempotencyKey: "f"})
	e.results(60*time.Second, f.ID)
	mu.Lock()
	out = seen["fast open"]
	mu.Unlock()
	if strings.Contains(out, "PONG") || !strings.Contains(out, "Operation not supported") {
		t.Errorf("TCP Fast Open to Redis from a job:\n%s", out)
	}
}
