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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/chatdir"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/mcpclient/mcptest"
	"github.com/odekrun/odek/queue"
)

// One worker serves two chats. Chat A's job writes a file in its
// directory; chat B's jobs try every route to it, to the worker's secrets
// and to Redis; each fails, and the model sees a clear error. Both ways a
// worker confines a command are run: re-executing odek itself (no
// odek-sandbox beside it, as after `go install`) and through the
// odek-sandbox helper installed beside it (the image), which must be the
// one that ran every confined command.
func TestWorkerTenantsAreIsolated(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	t.Run("odek re-executed", func(t *testing.T) {
		testWorkerTenantsAreIsolated(t, odekBin, "")
	})
	t.Run("odek-sandbox beside odek", func(t *testing.T) {
		bin, calls := installLeanHelper(t)
		n := testWorkerTenantsAreIsolated(t, bin, filepath.Join(filepath.Dir(bin), sandbox.LeanHelper))
		if got := countHelperCalls(t, calls); got < n {
			t.Errorf("odek-sandbox confined %d commands, want at least the %d shell routes: the worker confined some another way", got, n)
		}
	})
}

// testWorkerTenantsAreIsolated runs the route table against a worker
// started from bin, checks /healthz names wantHelper (bin itself when
// ""), and returns how many routes ran a confined shell command.
func testWorkerTenantsAreIsolated(t *testing.T, bin, wantHelper string) int {
	model := sandboxtest.NewModel()
	srv := llmtest.NewHandler(t, model.Handle)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	e.bin = bin
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--metrics-addr", "127.0.0.1:0")
	dirA := chatDir(t, artifacts, 1)
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
	if wantHelper == "" {
		wantHelper = bin
	}
	if got := checkHealthSandbox(t, w); got != wantHelper {
		t.Errorf("/healthz sandbox.helper = %q, want %q", got, wantHelper)
	}
	if log := w.stderr.String(); !strings.Contains(log, "sandbox_helper="+wantHelper+" ") && !strings.Contains(log, "sandbox_helper="+strconv.Quote(wantHelper)) {
		t.Errorf("the start-up log does not name the helper %s:\n%s", wantHelper, w.stderr.String())
	}
	shells := 0
	for _, rt := range model.Routes() {
		if rt.Tool == "shell" {
			shells++
		}
	}
	return shells
}

// checkHealthSandbox reads the worker's /healthz, checks it reports an
// active sandbox with the kernel's Landlock ABI, and returns the helper
// it names.
func checkHealthSandbox(t *testing.T, w *workerProc) string {
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
			Active      bool   `json:"active"`
			LandlockABI int    `json:"landlock_abi"`
			Helper      string `json:"helper"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" || !h.Sandbox.Active || h.Sandbox.LandlockABI != sandbox.ABI() {
		t.Fatalf("/healthz = %s (%v)", body, err)
	}
	if !strings.Contains(w.stderr.String(), "landlock_abi") {
		t.Errorf("the start-up log does not report the Landlock ABI:\n%s", w.stderr.String())
	}
	return h.Sandbox.Helper
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

// A worker job's sub-agents are confined too: the child's read_file and
// shell cannot reach another chat's file, and an odek.json the chat wrote
// into its own directory (declaring an extension server, which would run
// unconfined, approved by ODEK_APPROVE_MCP=1) is not read by the child.
func TestWorkerSubagentInheritsTheSandbox(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	artifacts := t.TempDir()
	dirA := chatDir(t, artifacts, 1)
	if err := os.MkdirAll(dirA, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirA, "notes.txt"), []byte(sandboxtest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "spawned")
	planted, _ := json.Marshal(fmt.Sprintf(`{"mcp_servers":{"x":{"command":"sh","args":["-c","touch %s"]}}}`, marker))
	var mu sync.Mutex
	var childSaw []string
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		switch {
		case g == "plant":
			if len(res) == 0 {
				return llmtest.CallTools(llmtest.Call{ID: "w", Name: "write_file", Arguments: `{"path":"odek.json","content":` + string(planted) + `}`})
			}
			return llmtest.Reply("planted")
		case g == "delegate":
			if len(res) == 0 {
				return delegateCall("CHILD read chat 1")
			}
			return llmtest.Reply("parent saw: " + strings.Join(res, " | "))
		case strings.Contains(g, "CHILD"):
			if len(res) == 0 {
				return llmtest.CallTools(
					// By its real name: the sandbox, not the name, must stop it.
					llmtest.Call{ID: "r", Name: "read_file", Arguments: `{"path":"../` + filepath.Base(dirA) + `/notes.txt"}`},
					llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"cat ../` + filepath.Base(dirA) + `/notes.txt"}`})
			}
			mu.Lock()
			childSaw = res
			mu.Unlock()
			return llmtest.Reply("child done")
		}
		return llmtest.Reply("?")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	e.env = append(e.env, "ODEK_APPROVE_MCP=1")
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", artifacts)
	p := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "plant", IdempotencyKey: "p"})
	e.results(60*time.Second, p.ID)
	if _, err := os.Stat(filepath.Join(chatDir(t, artifacts, 2), "odek.json")); err != nil {
		t.Fatalf("the chat's odek.json: %v", err)
	}
	d := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "delegate", IdempotencyKey: "d"})
	dres := e.results(120*time.Second, d.ID)[d.ID]
	mu.Lock()
	defer mu.Unlock()
	if len(childSaw) != 2 {
		t.Fatalf("the child saw %q; the job: %+v\n%s", childSaw, dres, w.stderr.String())
	}
	if strings.Contains(strings.Join(childSaw, ""), sandboxtest.Secret) || !strings.Contains(childSaw[0], "outside this job's root") || !strings.Contains(childSaw[1], "Permission denied") {
		t.Errorf("the child reached another chat: %q", childSaw)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the server declared in the chat's odek.json was started")
	}
}

// An MCP server of scope "job" starts for each job, in the job's root and
// under its sandbox: the real filesystem server from npm, allowed "/" by
// its own arguments, reads the chat's own file but not another chat's.
func TestWorkerJobScopedMCPServerIsConfined(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	fs := mcptest.NodeServer(t, "fs", "@modelcontextprotocol/server-filesystem", "/")
	nodeDir, err := filepath.Abs(mcptest.NodeDir())
	if err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	dirA, dirB := chatDir(t, artifacts, 1), chatDir(t, artifacts, 2)
	for _, d := range []string{dirA, dirB} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dirA, "notes.txt"), []byte(sandboxtest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirB, "own.txt"), []byte("chat two's own text"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) > 0 {
			mu.Lock()
			seen[g] = res[0]
			mu.Unlock()
			return llmtest.Reply("seen")
		}
		path := filepath.Join(dirB, "own.txt")
		if g == "other" {
			path = filepath.Join(dirA, "notes.txt")
		}
		args, _ := json.Marshal(map[string]string{"path": path})
		return llmtest.CallTools(llmtest.Call{ID: "f", Name: "fs__read_text_file", Arguments: string(args)})
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	config, _ := json.Marshal(map[string]any{
		"sandbox": map[string]any{"read_only_paths": []string{nodeDir}},
		"mcp_servers": map[string]any{"fs": map[string]any{
			"command": fs.Command, "args": fs.Args, "scope": "job", "auto_approve": true, "required": true,
		}},
	})
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", artifacts)
	own := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "own", IdempotencyKey: "o"})
	other := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "other", IdempotencyKey: "x"})
	res := e.results(120*time.Second, own.ID, other.ID)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(seen["own"], "chat two's own text") {
		t.Errorf("the job-scoped server could not read the chat's own file: %q (%+v)\n%s", seen["own"], res[own.ID], w.stderr.String())
	}
	if s := seen["other"]; s == "" || strings.Contains(s, sandboxtest.Secret) || !strings.Contains(strings.ToLower(s), "denied") {
		t.Errorf("the job-scoped server and another chat's file: %q (%+v)", s, res[other.ID])
	}
}

// currentTurn is the goal of the job a request belongs to and the tool
// results since: a chat's jobs share a session, so the goal is the last
// user message and the results are those after it.
func currentTurn(r llmtest.Recorded) (goal string, results []string) {
	for _, m := range r.Messages {
		switch m.Role {
		case llm.RoleUser:
			goal, results = m.Content, nil
		case llm.RoleTool:
			results = append(results, m.Content)
		}
	}
	return goal, results
}

// chatDir is chat id's directory under the chats directory dir, created
// as a worker would (package chatdir).
func chatDir(t *testing.T, dir string, id int64) string {
	t.Helper()
	p, err := chatdir.Ensure(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
