package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Through the binary: a pre_tool command hook blocks `rm -rf` and the
// model sees its reason; an HTTP hook receives every tool call with the
// run's id; the shell command that was blocked never ran; a user_prompt
// hook can refuse a run.
func TestHooksInRun(t *testing.T) {
	hookSrv := startHookRecorder(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.sh")
	os.WriteFile(policy, []byte("#!/bin/sh\ngrep -q 'rm -rf' && { echo 'rm -rf is not allowed here; move files to ./trash instead' >&2; exit 2; }\nexit 0\n"), 0o755)
	refuse := filepath.Join(dir, "refuse.sh")
	os.WriteFile(refuse, []byte("#!/bin/sh\ngrep -q 'secret plans' && { echo 'not this goal' >&2; exit 2; }\nexit 0\n"), 0o755)
	home, homeEnv := extOdekHome(t, `{}`)
	cfg := fmt.Sprintf(`{"dangerous":{"classes":{"destructive":"allow","code_execution":"allow","local_write":"allow"}},
	  "hooks":{"pre_tool":[{"command":[%q],"tools":["shell"]},{"url":%q}],
	           "user_prompt":[{"command":[%q]}]}}`, policy, hookSrv.URL, refuse)
	os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600)

	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, "build"), 0o755)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "shell", Arguments: `{"command":"rm -rf build"}`}),
		llmtest.CallTools(llmtest.Call{ID: "c2", Name: "shell", Arguments: `{"command":"echo hello"}`}),
		llmtest.Reply("done"),
	)
	evPath := filepath.Join(t.TempDir(), "ev.jsonl")
	out := runOdekEnv(t, srv.URL, work, []string{homeEnv}, "run", "--json", "--events-jsonl", evPath, "clean the build")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	var res struct {
		RunID string `json:"run_id"`
	}
	json.Unmarshal([]byte(out.stdout), &res)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if c := reqs[1].LastMessage().Content; !strings.Contains(c, "rm -rf is not allowed here; move files to ./trash instead") {
		t.Fatalf("the model did not see the hook's reason: %q", c)
	}
	if _, err := os.Stat(filepath.Join(work, "build")); err != nil {
		t.Fatal("the blocked command ran")
	}
	seen := hookSrv.inputs()
	if len(seen) != 1 {
		// The command hook blocked the first call before the HTTP hook
		// ran; the second call went through both.
		t.Fatalf("HTTP hook saw %d calls: %v", len(seen), seen)
	}
	if seen[0]["run_id"] != res.RunID || seen[0]["event"] != "pre_tool" || res.RunID == "" {
		t.Fatalf("HTTP hook input: %v (run %q)", seen[0], res.RunID)
	}
	ev, _ := os.ReadFile(evPath)
	if !strings.Contains(string(ev), `"type":"hook_blocked"`) || !strings.Contains(string(ev), `"type":"hook_completed"`) {
		t.Fatalf("no hook_* events:\n%s", ev)
	}

	out = runOdekEnv(t, srv.URL, work, []string{homeEnv}, "run", "reveal the secret plans")
	if out.code != 1 || !strings.Contains(out.stderr, "not this goal") {
		t.Fatalf("user_prompt refusal: exit %d %s", out.code, out.stderr)
	}
}

// The same pre_tool hook in a worker job (real redis-server, real worker
// process): the model sees the reason and the HTTP hook gets the job's
// calls with its run id.
func TestHooksInWorkerJob(t *testing.T) {
	hookSrv := startHookRecorder(t)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "shell", Arguments: `{"command":"rm -rf /tmp/nothing-here"}`}),
		llmtest.CallTools(llmtest.Call{ID: "c2", Name: "shell", Arguments: `{"command":"echo ok"}`}),
		llmtest.Reply("cleaned"),
	)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 2)
	// The job is confined (the worker's default), and so is its hook: the
	// program must be one the sandbox lets the job run (/bin/sh here; a
	// script under /tmp would be refused, and a refused pre_tool hook
	// blocks the call).
	policy := "grep -q 'rm -rf' && { echo 'rm -rf is blocked by the operator' >&2; exit 2; }; exit 0"
	cfg := fmt.Sprintf(`{"dangerous":{"classes":{"destructive":"allow","code_execution":"allow","local_write":"allow"}},
	  "hooks":{"pre_tool":[{"url":%q},{"command":["/bin/sh","-c",%q],"tools":["shell"]}]}}`, hookSrv.URL, policy)
	os.WriteFile(filepath.Join(e.home, "config.json"), []byte(cfg), 0o600)
	e.startWorker("w1")
	out := runOdekEnv(t, srv.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "7", "--wait", "clean up")
	if out.code != 0 || !strings.Contains(out.stdout, "cleaned") {
		t.Fatalf("job: exit %d %s %s", out.code, out.stdout, out.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[1].LastMessage().Content, "rm -rf is blocked by the operator") {
		t.Fatalf("the model did not see the reason: %d requests", len(reqs))
	}
	var runIDs []string
	for _, in := range hookSrv.inputs() {
		runIDs = append(runIDs, fmt.Sprint(in["run_id"]))
	}
	if len(runIDs) != 2 || runIDs[0] == "" || runIDs[0] == "<nil>" || runIDs[0] != runIDs[1] {
		t.Fatalf("HTTP hook run ids: %v", runIDs)
	}
}

// A project file's hooks section is never read: a repository cannot add a
// hook (here one that would block every call and leave a marker).
func TestProjectHooksIgnored(t *testing.T) {
	work := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	os.WriteFile(filepath.Join(work, "odek.json"), []byte(fmt.Sprintf(`{"hooks":{"pre_tool":[{"command":["/bin/sh","-c","touch %s; exit 2"]}],"session_start":[{"command":["/bin/sh","-c","touch %s; exit 2"]}]}}`, marker, marker)), 0o644)
	_, homeEnv := extOdekHome(t, `{}`)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}),
		llmtest.Reply("done"),
	)
	out := runOdekEnv(t, srv.URL, work, []string{homeEnv}, "run", "look around")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hook from the project file ran")
	}
	if c := srv.Requests()[1].LastMessage().Content; strings.Contains(c, "blocked") {
		t.Fatalf("the call was blocked: %q", c)
	}
}

// hookRecorder is an HTTP hook endpoint on loopback that records every
// hook input it receives.
type hookRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []map[string]any
}

func startHookRecorder(t *testing.T) *hookRecorder {
	t.Helper()
	h := &hookRecorder{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		json.NewDecoder(r.Body).Decode(&in)
		h.mu.Lock()
		h.seen = append(h.seen, in)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// inputs are the hook inputs received so far.
func (h *hookRecorder) inputs() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.seen...)
}
