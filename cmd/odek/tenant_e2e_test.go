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
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/queue"
)

// The secret chat A writes, and what no job of chat B may ever see.
const tenantSecret = "chat-A-secret-7f3e9b"

// route is one attempt of chat B to reach what is not its own: the tool
// call its fake model makes, and a text the result must show (the clear
// error the model sees).
type route struct {
	tool string
	args map[string]any
	want string
}

// tenantRoutes lists every way out the sandbox must close, given chat A's
// directory, the worker's ODEK_HOME, its pid and the Redis port.
func tenantRoutes(dirA, home string, workerPID int, redisPort string) map[string]route {
	notes := filepath.Join(dirA, "notes.txt")
	sh := func(cmd, want string) route { return route{"shell", map[string]any{"command": cmd}, want} }
	outside := "outside this job's root"
	return map[string]route{
		"read relative":     {"read_file", map[string]any{"path": "../1/notes.txt"}, outside},
		"read absolute":     {"read_file", map[string]any{"path": notes}, outside},
		"read planted link": {"read_file", map[string]any{"path": "planted"}, outside},
		"plant a link":      sh("ln -s "+notes+" planted && cat planted", "Permission denied"),
		"search parent":     {"search_files", map[string]any{"pattern": "secret", "path": ".."}, outside},
		"list root":         {"list_dir", map[string]any{"path": "/"}, outside},
		"list parent":       {"list_dir", map[string]any{"path": ".."}, outside},
		"write into A":      {"write_file", map[string]any{"path": "../1/notes.txt", "content": "overwritten"}, outside},
		"shell cat":         sh("cat ../1/notes.txt", "Permission denied"),
		"shell cat abs":     sh("cat "+notes, "Permission denied"),
		"shell cp":          sh("cp "+notes+" stolen.txt", "Permission denied"),
		"shell hard link":   sh("ln "+notes+" linked.txt", "failed to create hard link"), // Landlock answers EXDEV
		"shell find":        sh("find / -name notes.txt 2>&1 | head -50; echo find-done", "find-done"),
		"shell tcp redis":   sh("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "+redisPort+"))'", "PermissionError"),
		"shell mptcp redis": sh("python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.connect((\"127.0.0.1\", "+redisPort+"))'", "Protocol not supported"),
		"shell redis-cli":   sh("redis-cli -h 127.0.0.1 -p "+redisPort+" keys '*' 2>&1; echo cli-done", "cli-done"),
		"shell proc":        sh(fmt.Sprintf("cat /proc/%d/environ", workerPID), "Permission denied"),
		"shell odek home":   sh("cat "+filepath.Join(home, "config.json"), "Permission denied"),
		"shell env":         sh("env; echo env-done", "env-done"),
	}
}

// tenantModel is the fake model of the cross-tenant test: a job's goal
// names a route; its first call makes the route's tool call, the second
// answers with the tool result it was given.
type tenantModel struct {
	mu      sync.Mutex
	routes  map[string]route
	results map[string]string // goal → tool result text the model saw
}

func (m *tenantModel) handle(r llmtest.Recorded) llmtest.Turn {
	goal := ""
	for _, msg := range r.Messages {
		if msg.Role == llm.RoleUser {
			goal = msg.Content
		}
	}
	last := r.LastMessage()
	if last.Role == llm.RoleTool {
		m.mu.Lock()
		m.results[goal] = last.Content
		m.mu.Unlock()
		return llmtest.Reply("seen")
	}
	if goal == "write the secret" {
		return llmtest.CallTools(llmtest.Call{Name: "write_file", Arguments: fmt.Sprintf(`{"path":"notes.txt","content":%q}`, tenantSecret)})
	}
	rt, ok := m.routes[goal]
	if !ok {
		return llmtest.Reply("unknown goal " + goal)
	}
	args, _ := json.Marshal(rt.args)
	return llmtest.CallTools(llmtest.Call{Name: rt.tool, Arguments: string(args)})
}

// requireLandlock skips a test that needs the sandbox on a kernel
// without it, unless ODEK_REQUIRE_LANDLOCK is set (CI), where it fails.
func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
		if os.Getenv("ODEK_REQUIRE_LANDLOCK") != "" {
			t.Fatalf("Landlock ABI %d < %d and ODEK_REQUIRE_LANDLOCK is set", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
	}
}

// permissive is an operator policy that allows every class a tool may
// have: what stops chat B below is the sandbox, not the danger policy.
const permissive = `{"dangerous":{"classes":{"local_write":"allow","system_write":"allow","code_execution":"allow","network_egress":"allow","destructive":"allow","unknown":"allow","install":"allow"}}}`

// One worker serves two chats. Chat A's job writes a file in its
// directory; chat B's jobs try every route to it, to the worker's secrets
// and to Redis; each fails, and the model sees a clear error.
func TestWorkerTenantsAreIsolated(t *testing.T) {
	requireLandlock(t)
	model := &tenantModel{results: map[string]string{}}
	srv := llmtest.NewHandler(t, model.handle)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--metrics-addr", "127.0.0.1:0")
	dirA := filepath.Join(artifacts, "1")
	_, redisPort, _ := strings.Cut(e.srv.Addr, ":")
	model.mu.Lock()
	model.routes = tenantRoutes(dirA, e.home, w.cmd.Process.Pid, redisPort)
	model.mu.Unlock()

	a := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "write the secret", IdempotencyKey: "a1"})
	if res := e.results(60*time.Second, a.ID)[a.ID]; res.Status != queue.StatusSucceeded {
		t.Fatalf("chat A's job: %+v\n%s", res, w.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dirA, "notes.txt")); err != nil || string(b) != tenantSecret {
		t.Fatalf("chat A's file: %q %v", b, err)
	}

	// The planted link must exist before the job that reads it.
	p := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "plant a link", IdempotencyKey: "b-plant"})
	e.results(60*time.Second, p.ID)
	var ids []string
	for name := range model.routes {
		if name == "plant a link" {
			continue
		}
		j := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: name, IdempotencyKey: "b-" + name})
		ids = append(ids, j.ID)
	}
	for id, res := range e.results(120*time.Second, ids...) {
		if strings.Contains(res.Answer, tenantSecret) {
			t.Errorf("job %s answered with chat A's secret: %q", id, res.Answer)
		}
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	for name, rt := range model.routes {
		seen, ok := model.results[name]
		switch {
		case !ok:
			t.Errorf("%s: the model never saw a tool result", name)
		case strings.Contains(seen, tenantSecret):
			t.Errorf("%s: chat B's model saw chat A's secret:\n%s", name, seen)
		case strings.Contains(seen, dirA+"/notes.txt") && name == "shell find":
			t.Errorf("%s: find listed chat A's file:\n%s", name, seen)
		case strings.Contains(seen, "REDIS_URL") || strings.Contains(seen, "ODEK_API_KEY") || strings.Contains(seen, "sk-test-key"):
			t.Errorf("%s: the worker's environment leaked:\n%s", name, seen)
		case strings.Contains(seen, "odek:") && name == "shell redis-cli":
			t.Errorf("%s: Redis answered with queue keys:\n%s", name, seen)
		case !strings.Contains(seen, rt.want):
			t.Errorf("%s: the result lacks %q:\n%s", name, rt.want, seen)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dirA, "notes.txt")); string(b) != tenantSecret {
		t.Errorf("chat A's file was changed: %q", b)
	}
	if ents, _ := os.ReadDir(dirA); len(ents) != 1 {
		t.Errorf("chat A's directory holds more than its file: %v", ents)
	}
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
