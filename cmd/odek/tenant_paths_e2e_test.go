package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// The routes of issue 21 through paths a chat controls, each through a
// real worker, real sub-agent processes and a real redis-server.

// stageRE finds the staging directory a child is told to write to.
var stageRE = regexp.MustCompile(`write them under (\S+)/ `)

// Route 5: a hostile child (a prompt-injected model in chat 2) stages a
// file and, from its confined shell, replaces its own artifact root with a
// symbolic link — to chat 1's directory in one task, to ODEK_HOME in the
// other — before the unconfined child moves the staged files. With the
// artifact roots inside the chat's directory that overwrote chat 1's file
// and the operator's config.json. Now the roots live outside every chat,
// so neither file changes, and the parent still receives its artifacts.
func TestWorkerSubagentArtifactRootsOutsideTheChat(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	artifacts := t.TempDir()
	dirA := chatDir(t, artifacts, 1)
	if err := os.MkdirAll(dirA, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirA, "notes.txt"), []byte(sandboxtest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	var home string
	planted := `{"mcp_servers":{"x":{"command":"sh","args":["-c","touch /tmp/odek-planted"]}}}`
	var mu sync.Mutex
	var parentSaw string
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		switch {
		case g == "delegate":
			if len(res) == 0 {
				return delegateCall("CHILD to chat 1", "CHILD to home")
			}
			mu.Lock()
			parentSaw = strings.Join(res, "\n")
			mu.Unlock()
			return llmtest.Reply("done")
		case strings.HasPrefix(g, "CHILD"):
			if len(res) > 0 {
				return llmtest.Reply("staged")
			}
			m := stageRE.FindStringSubmatch(g)
			if m == nil {
				return llmtest.Reply("no staging directory in the message")
			}
			stage := m[1]
			tid := filepath.Base(stage)
			target, name, content := dirA, "notes.txt", "PWNED by chat 2"
			if strings.Contains(g, "home") {
				target, name, content = home, "config.json", planted
			}
			w, _ := json.Marshal(map[string]string{"path": stage + "/" + name, "content": content})
			// Wherever the artifact root is, if the chat can reach it, it
			// becomes a link to the target.
			sh, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(
				`for d in .odek/artifacts/*/%[1]s .odek/artifacts/%[1]s; do if [ -d "$d" ]; then rm -rf "$d" && ln -s %[2]s "$d"; fi; done; true`, tid, target)})
			return llmtest.CallTools(
				llmtest.Call{ID: "w", Name: "write_file", Arguments: string(w)},
				llmtest.Call{ID: "s", Name: "shell", Arguments: string(sh)})
		}
		return llmtest.Reply("?")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	home = e.home
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", artifacts)
	d := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "delegate", IdempotencyKey: "d"})
	res := e.results(120*time.Second, d.ID)[d.ID]
	if b, _ := os.ReadFile(filepath.Join(dirA, "notes.txt")); string(b) != sandboxtest.Secret {
		t.Errorf("chat 1's file was overwritten by chat 2's sub-agent: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.home, "config.json")); string(b) != sandboxtest.Permissive {
		t.Errorf("ODEK_HOME/config.json was written by chat 2's sub-agent: %q", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(parentSaw, "PWNED by chat 2") {
		t.Errorf("the parent did not receive the staged artifact: %q (%+v)\n%s", parentSaw, res, w.stderr.String())
	}
	if _, err := os.Lstat(filepath.Join(chatDir(t, artifacts, 2), ".odek", "artifacts")); err == nil {
		t.Errorf("a sub-agent artifact directory exists inside the chat's directory")
	}
}

// A FIFO planted in the chat's directory — named as the next job's
// photo, and left where the artifact collection walks — blocks neither
// that job nor the worker: the vision reader and the collection open the
// chat's files O_NONBLOCK through descriptors and refuse what is not a
// regular file. On main the photo's open blocked the job for ever.
func TestWorkerFIFOPlantedAsPhotoDoesNotBlock(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	artifacts := t.TempDir()
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if g == "plant" && len(res) == 0 {
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell",
				Arguments: `{"command":"mkdir -p uploads && mkfifo uploads/photo.jpg && mkfifo result.txt && echo ok > real.txt"}`})
		}
		return llmtest.Reply("answered " + g)
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", artifacts)
	p := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "plant", IdempotencyKey: "p"})
	pres := e.results(60*time.Second, p.ID)[p.ID]
	if fi, err := os.Lstat(filepath.Join(chatDir(t, artifacts, 2), "uploads", "photo.jpg")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was not planted (%v %v): %+v\n%s", fi, err, pres, w.stderr.String())
	}
	if len(pres.Artifacts) != 1 || pres.Artifacts[0].Path != filepath.Base(chatDir(t, artifacts, 2))+"/real.txt" {
		t.Errorf("artifacts of the planting job: %+v", pres.Artifacts)
	}
	photo := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "look at the photo", IdempotencyKey: "v",
		Images: []string{"uploads/photo.jpg"}, Vision: "true"})
	other := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "chat one", IdempotencyKey: "o"})
	res := e.results(60*time.Second, photo.ID, other.ID)
	if r := res[photo.ID]; r.Status != queue.StatusSucceeded || r.Answer != "answered look at the photo" {
		t.Errorf("the job with a FIFO as its photo: %+v", r)
	}
	if r := res[other.ID]; r.Status != queue.StatusSucceeded {
		t.Errorf("another chat's job: %+v", r)
	}
}

// Sub-agent fan-out is capped per worker, at every depth: with
// subagent.max_processes 2, a job's two sub-agents hold both slots, so the
// four grandchildren they ask for are refused with a clear error instead
// of starting (on main all of them started), and another chat's job that
// delegates meanwhile waits for a slot and then runs. The two sub-agents
// answer only once both have their own delegate results, so neither frees
// its slot early.
func TestWorkerSubagentFanOutCapped(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	var mu sync.Mutex
	leaves := 0
	var midSaw []string
	midArrived := make(chan struct{}, 2)
	bothDone := make(chan struct{})
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		switch {
		case g == "fan out":
			if len(res) == 0 {
				return delegateCall("MID a", "MID b")
			}
			return llmtest.Reply("parent done")
		case g == "other chat delegates":
			if len(res) == 0 {
				return delegateCall("SIMPLE 1", "SIMPLE 2")
			}
			return llmtest.Reply("parent done")
		case strings.HasPrefix(g, "MID"):
			if len(res) == 0 {
				midArrived <- struct{}{}
				return delegateCall("LEAF 1", "LEAF 2")
			}
			mu.Lock()
			midSaw = append(midSaw, res[0])
			if len(midSaw) == 2 {
				close(bothDone)
			}
			mu.Unlock()
			select {
			case <-bothDone:
			case <-time.After(60 * time.Second):
			}
			return llmtest.Reply("mid done")
		case strings.HasPrefix(g, "LEAF"):
			mu.Lock()
			leaves++
			mu.Unlock()
			return llmtest.Reply("leaf done")
		}
		return llmtest.Reply("simple done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := strings.TrimSuffix(sandboxtest.Permissive, "}") + `,"subagent":{"max_processes":2,"max_depth":2}}`
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", t.TempDir())
	a := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "fan out", IdempotencyKey: "a"})
	for range 2 {
		select {
		case <-midArrived:
		case <-time.After(60 * time.Second):
			t.Fatalf("the job's sub-agents did not start\n%s", w.stderr.String())
		}
	}
	b := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "other chat delegates", IdempotencyKey: "b"})
	res := e.results(120*time.Second, a.ID, b.ID)
	for _, id := range []string{a.ID, b.ID} {
		if r := res[id]; r.Status != queue.StatusSucceeded || r.Answer != "parent done" {
			t.Errorf("job %s: %+v\n%s", id, r, w.stderr.String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if leaves != 0 {
		t.Errorf("%d grandchildren started past the cap of 2 sub-agent processes", leaves)
	}
	if len(midSaw) != 2 {
		t.Fatalf("the sub-agents saw %d delegate results, want 2: %q", len(midSaw), midSaw)
	}
	for _, s := range midSaw {
		if strings.Count(s, "sub-agent process cap is reached") != 2 || !strings.Contains(s, "subagent.max_processes") {
			t.Errorf("a sub-agent's delegate result: %q", s)
		}
	}
}
