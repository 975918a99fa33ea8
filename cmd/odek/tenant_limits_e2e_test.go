package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// A job's memory and CPU time are bounded as a whole, through a real
// worker and real Redis: with sandbox.job_memory_mb 64 and
// sandbox.job_cpu_seconds 2, one chat's job that holds 200 MB in a shell
// and another's that spins are killed inside their own cgroups (each
// model sees its command killed, and each job still ends), while a third
// chat's job, queued behind them on the two slots, completes. Needs
// per-job cgroups with memory and CPU accounting (root here).
func TestWorkerJobMemoryAndCPUAreBounded(t *testing.T) {
	where, err := sandbox.CgroupStatus()
	if err != nil || strings.Contains(where, "no memory") || strings.Contains(where, "no CPU") {
		t.Skipf("no per-job memory and CPU accounting here: %q %v", where, err)
	}
	steps := map[string]string{
		"hog":   `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo held ${#x}`,
		"spin":  `while :; do :; done`,
		"hello": `echo hello from chat two`,
	}
	var mu sync.Mutex
	told := map[string]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) == 0 {
			args, _ := json.Marshal(map[string]any{"command": steps[g], "timeout_seconds": 120})
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
		}
		mu.Lock()
		told[g] = res[0]
		mu.Unlock()
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := strings.TrimSuffix(sandboxtest.Permissive, "}") + `,"sandbox":{"job_memory_mb":64,"job_cpu_seconds":2}}`
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", t.TempDir(), "--concurrency", "2")
	hog := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "hog", IdempotencyKey: "limits-hog"})
	spin := e.enqueue(queue.Job{ChatID: 3, UserID: 3, Goal: "spin", IdempotencyKey: "limits-spin"})
	hello := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "hello", IdempotencyKey: "limits-hello"})
	res := e.results(90*time.Second, hog.ID, spin.ID, hello.ID)
	for _, id := range []string{hog.ID, spin.ID, hello.ID} {
		if r, ok := res[id]; !ok || r.Status != queue.StatusSucceeded {
			t.Errorf("job %s: %+v (finished: %v)\n%s", id, r, ok, w.stderr.String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range []string{"hog", "spin"} {
		if !strings.Contains(told[g], "killed by signal: killed") || strings.Contains(told[g], "held") {
			t.Errorf("%s: the model saw %q; want the command killed", g, told[g])
		}
	}
	if !strings.Contains(told["hello"], "hello from chat two") {
		t.Errorf("chat 2's job: the model saw %q", told["hello"])
	}
}
