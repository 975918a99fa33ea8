package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// An `odek subagent` child killed with SIGKILL cannot end its own jobs:
// a background process its confined shell left lived on after it, with
// the chat's write access. Through a real worker and Redis: the child's
// shell leaves a sleep, the test SIGKILLs the child while its model call
// is in flight, and once the parent's job is done the sleep is gone — the
// parent ended the jobs of its dead child by their cgroups
// (sandbox.KillJobsOf). Needs per-job cgroups (root here).
func TestWorkerKilledSubagentLeavesNoJobProcesses(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	if where, err := sandbox.CgroupStatus(); err != nil {
		t.Skipf("no per-job cgroups: %v", err)
	} else {
		t.Logf("per-job cgroups: %s", where)
	}
	marker := fmt.Sprintf("%d.%06d9", 6000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	childWaiting := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		switch {
		case g == "delegate":
			if len(res) == 0 {
				return delegateCall("CHILD leave a survivor")
			}
			return llmtest.Reply("parent done")
		case strings.Contains(g, "CHILD"):
			if len(res) == 0 {
				return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: fmt.Sprintf(`{"command":"sleep %s >/dev/null 2>&1 & echo started"}`, marker)})
			}
			once.Do(func() { close(childWaiting) })
			select {
			case <-release:
			case <-time.After(60 * time.Second):
			}
			return llmtest.Reply("child done")
		}
		return llmtest.Reply("?")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", t.TempDir())
	t.Cleanup(func() {
		for _, pid := range sandboxtest.Alive(t, marker) {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	})
	j := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "delegate", IdempotencyKey: "d"})
	select {
	case <-childWaiting:
	case <-time.After(60 * time.Second):
		close(release)
		t.Fatalf("the child never ran its shell\n%s", w.stderr.String())
	}
	if n := len(sandboxtest.Alive(t, marker)); n != 1 {
		close(release)
		t.Fatalf("%d survivors before the kill, want 1", n)
	}
	child := childOf(t, w.cmd.Process.Pid, "subagent")
	if child == 0 {
		close(release)
		t.Fatalf("no `odek subagent` child of the worker\n%s", w.stderr.String())
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	close(release)
	if res := e.results(60*time.Second, j.ID)[j.ID]; res.Status == "" {
		t.Fatalf("no result: %+v", res)
	}
	if pids := sandboxtest.WaitGone(t, marker, 10*time.Second); len(pids) > 0 {
		t.Errorf("the killed child's job lives on: %v", pids)
	}
}

// childOf is the pid of a child of parent whose command line holds word,
// 0 when none.
func childOf(t *testing.T, parent int, word string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat)[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), word) {
			return pid
		}
	}
	return 0
}
