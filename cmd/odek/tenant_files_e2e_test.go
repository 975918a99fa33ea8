package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// fileStep is one tool call of a scripted job and when it ran: issued is
// when the fake model handed the call out, done when the worker came back
// with its result.
type fileStep struct {
	call         llmtest.Call
	result       string
	issued, done time.Time
}

// fileScript is a fake model that plays, for each goal, a list of tool
// calls one at a time, then answers "done"; it records each call's result
// and timing.
type fileScript struct {
	mu    sync.Mutex
	steps map[string][]*fileStep
}

func (s *fileScript) handle(r llmtest.Recorded) llmtest.Turn {
	goal, results := currentTurn(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	steps := s.steps[goal]
	if n := len(results); n > 0 && n <= len(steps) {
		steps[n-1].result, steps[n-1].done = results[n-1], time.Now()
	}
	if n := len(results); n < len(steps) {
		steps[n].issued = time.Now()
		return llmtest.CallTools(steps[n].call)
	}
	return llmtest.Reply("done: " + goal)
}

func (s *fileScript) get(goal string) []fileStep {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []fileStep
	for _, st := range s.steps[goal] {
		out = append(out, *st)
	}
	return out
}

func call(name string, args map[string]any) *fileStep {
	b, _ := json.Marshal(args)
	return &fileStep{call: llmtest.Call{Name: name, Arguments: string(b)}}
}

// One worker, two slots. Chats 10-12 plant what used to freeze or sink a
// worker, each with its own confined shell: a FIFO (read_file and patch
// blocked in open(2) for ever), a 400 GiB sparse file without a newline
// (read_file read all of it, deaf to cancel), a 768 MiB sparse file
// (patch read it whole, adding GiBs to the worker). Each job now gets a
// clear error or a bounded result and finishes; the worker's peak memory
// stays small; and chat 2's job, queued behind all three, completes.
func TestWorkerFileToolsSurviveSpecialFiles(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	script := &fileScript{steps: map[string][]*fileStep{
		"fifo": {
			call("shell", map[string]any{"command": "mkfifo pipe && echo made"}),
			call("read_file", map[string]any{"path": "pipe"}),
			call("patch", map[string]any{"path": "pipe", "old_string": "a", "new_string": "b"}),
			call("search_files", map[string]any{"pattern": "a"}),
		},
		"sparse": {
			call("shell", map[string]any{"command": "printf '%9000s' '' | tr ' ' a > sparse && truncate -s 400G sparse && echo made"}),
			call("read_file", map[string]any{"path": "sparse"}),
		},
		"huge": {
			call("shell", map[string]any{"command": "printf x > huge && truncate -s 768M huge && echo made"}),
			call("patch", map[string]any{"path": "huge", "old_string": "x", "new_string": "y"}),
		},
	}}
	for _, goal := range []string{"hello", "hello again"} {
		script.steps[goal] = []*fileStep{
			call("write_file", map[string]any{"path": "hello.txt", "content": "hi from chat two\n"}),
			call("read_file", map[string]any{"path": "hello.txt"}),
		}
	}
	srv := llmtest.NewHandler(t, script.handle)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	// The sandbox's default file size limit (max_file_size_mb, 1 GiB)
	// already stops a job from making the 400 GiB file; lift it, so that
	// what is tested is the file tools with such a file (an operator may
	// raise the limit, and files also arrive by other ways).
	cfg := strings.TrimSuffix(sandboxtest.Permissive, "}") + `,"sandbox":{"max_file_size_mb":1048576}}`
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--concurrency", "2")

	// Chat 2's job alone first: its normal time on this worker.
	start := time.Now()
	alone := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "hello", IdempotencyKey: "b-hello"})
	if r := e.results(60*time.Second, alone.ID)[alone.ID]; r.Status != queue.StatusSucceeded {
		t.Fatalf("chat 2's job alone: %+v", r)
	}
	normal := time.Since(start)

	attacks := []string{"huge", "fifo", "sparse"}
	start = time.Now()
	var ids []string
	for i, goal := range attacks {
		j := e.enqueue(queue.Job{ChatID: int64(10 + i), UserID: 1, Goal: goal, IdempotencyKey: "a-" + goal})
		ids = append(ids, j.ID)
	}
	victim := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "hello again", IdempotencyKey: "b-again"})
	// The bound is generous (the jobs take well under a second each here);
	// on the old code the FIFO job never ended and held its slot for good,
	// the sparse read held the other for minutes, and chat 2's job waited.
	res := map[string]queue.Result{}
	finished := map[string]time.Duration{}
	for deadline := time.Now().Add(60 * time.Second); len(res) < len(ids)+1 && time.Now().Before(deadline); {
		e.drainResults(res, 200*time.Millisecond)
		for id := range res {
			if _, ok := finished[id]; !ok {
				finished[id] = time.Since(start)
			}
		}
	}
	if d, ok := finished[victim.ID]; ok {
		t.Logf("chat 2's job: %v alone, %v queued behind the three", normal.Round(time.Millisecond), d.Round(time.Millisecond))
	}
	for i, goal := range attacks {
		if r, ok := res[ids[i]]; !ok || r.Status != queue.StatusSucceeded {
			t.Errorf("chat %d's %s job: %+v (finished: %v)", 10+i, goal, r, ok)
		} else {
			t.Logf("chat %d's %s job finished %v after it was queued", 10+i, goal, finished[ids[i]].Round(time.Millisecond))
		}
	}
	if r, ok := res[victim.ID]; !ok || r.Status != queue.StatusSucceeded {
		t.Errorf("chat 2's job queued behind them did not complete within 60s: %+v (finished: %v)", r, ok)
	}
	want := map[string][]string{
		"fifo":        {"made", "read_file: pipe is a FIFO, not a regular file", "patch: pipe is a FIFO, not a regular file", "no matches"},
		"sparse":      {"made", "of at least 1 (counting stopped after 64 MiB"},
		"huge":        {"made", "patch: huge is 805306368 bytes, above patch's limit of 8388608 bytes (8 MiB)"},
		"hello again": {"wrote", "hi from chat two"},
	}
	for goal, texts := range want {
		steps := script.get(goal)
		for i, st := range steps {
			if i < len(texts) && !strings.Contains(st.result, texts[i]) {
				t.Errorf("%s, step %d (%s): the model saw %q; want %q", goal, i, st.call.Name, clipText(st.result), texts[i])
			}
			switch {
			case !st.done.IsZero():
				t.Logf("%-6s %-12s took %v", goal, st.call.Name, st.done.Sub(st.issued).Round(time.Millisecond))
			case !st.issued.IsZero():
				t.Logf("%-6s %-12s still running after %v", goal, st.call.Name, time.Since(st.issued).Round(time.Millisecond))
			}
		}
	}

	// The 768 MiB patch and the 400 GiB read did not pass through the
	// worker's memory: its peak resident size stays far below either.
	hwm := peakRSS(t, w.cmd.Process.Pid)
	t.Logf("worker peak RSS (VmHWM) %d MiB", hwm>>20)
	if hwm > 256<<20 {
		t.Errorf("the worker's peak RSS is %d MiB", hwm>>20)
	}
}

// peakRSS reads the peak resident set size (VmHWM) of process pid, in
// bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
