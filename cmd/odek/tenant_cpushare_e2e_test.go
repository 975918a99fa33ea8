package main_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// A job that spins does not starve another chat's job on the same worker:
// through a real worker (sandbox on, per-job cgroups) and real Redis,
// chat 51's job starts 16 busy loops and waits on them; while they spin,
// chat 52's job runs a fixed CPU-bound loop and its answer arrives while
// chat 51's job is still running; then chat 51's job is cancelled. While
// both run, each job's processes are in a cpu cgroup of their own
// (internal/sandbox/cpushare_linux.go), which the test reads from
// /proc. How long chat 52's loop takes with and without the share is
// in docs/BENCHMARKS.md (BenchmarkJobCPUShare), not asserted here.
func TestWorkerSpinningJobDoesNotStarveAnotherChat(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	if where, err := sandbox.CgroupStatus(); err != nil || strings.Contains(where, "no CPU share") {
		t.Skipf("no per-job CPU share here: %s %v", where, err)
	}
	cmds := map[string]string{
		"spin":  "for i in $(seq 16); do sh -c 'while :; do :; done' & done; echo spinning > spinning.txt; wait",
		"count": "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo counted $i",
	}
	var mu sync.Mutex
	told := map[string]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) == 0 {
			args, _ := json.Marshal(map[string]any{"command": cmds[g], "timeout_seconds": 300})
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
		}
		mu.Lock()
		told[g] = res[0]
		mu.Unlock()
		return llmtest.Reply("done " + g)
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 1)
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--approval-timeout", "30s", "--concurrency", "2")
	answer := func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			qs, _ := e.q.ReadApprovals(context.Background(), "test-frontend", 10, 200*time.Millisecond)
			for _, q := range qs {
				_ = e.q.Answer(context.Background(), q.ID, true)
			}
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	go answer(stop)
	spin := e.enqueue(queue.Job{ChatID: 51, UserID: 51, Goal: "spin", IdempotencyKey: "spin"})
	spinDir := chatDir(t, artifacts, 51)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(spinDir + "/spinning.txt"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat 51's job never started spinning\n%s", w.stderr.String())
		}
	}
	// The spinners are in a cpu cgroup of their job's (v1's cpu line, or
	// v2's), not the worker's.
	spinners := 0
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		cl, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cl), "while :; do :; done") || !strings.HasPrefix(string(cl), "sh\x00") {
			continue
		}
		cg, err := os.ReadFile("/proc/" + ent.Name() + "/cgroup")
		if err != nil {
			continue
		}
		spinners++
		if cpu := cpuCgroupLine(string(cg)); !strings.Contains(cpu, "/odek-") {
			t.Errorf("a spinning process of chat 51's job is in cpu cgroup %q, not its job's", cpu)
			break
		}
	}
	if spinners == 0 {
		t.Error("no spinning process of chat 51's job found in /proc")
	}
	count := e.enqueue(queue.Job{ChatID: 52, UserID: 52, Goal: "count", IdempotencyKey: "count"})
	got := map[string]queue.Result{}
	var order []string
	for deadline := time.Now().Add(120 * time.Second); got[count.ID].JobID == ""; {
		if time.Now().After(deadline) {
			t.Fatalf("chat 52's job did not finish while chat 51's spun\n%s", w.stderr.String())
		}
		before := len(got)
		e.drainResults(got, 200*time.Millisecond)
		if len(got) > before {
			for id := range got {
				if !containsStr(order, id) {
					order = append(order, id)
				}
			}
		}
	}
	if got[spin.ID].JobID != "" || order[0] != count.ID {
		t.Errorf("chat 51's spinning job ended first (%v); want chat 52's answer while it spins", order)
	}
	mu.Lock()
	seen := told["count"]
	mu.Unlock()
	if !strings.Contains(seen, "counted 200000") {
		t.Errorf("chat 52's loop did not finish: %q", seen)
	}
	if err := e.q.Cancel(context.Background(), spin.ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); got[spin.ID].JobID == ""; {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled spinning job did not end\n%s", w.stderr.String())
		}
		e.drainResults(got, 200*time.Millisecond)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cpuCgroupLine is the cpu controller's cgroup path in the text of
// /proc/PID/cgroup: v1's line naming cpu, else v2's.
func cpuCgroupLine(procCgroup string) string {
	v2 := ""
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" {
				return parts[2]
			}
		}
	}
	return v2
}
