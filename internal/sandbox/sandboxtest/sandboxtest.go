// Package sandboxtest holds what the cross-tenant tests of odek's front
// ends share: the routes one chat tries to reach another's data, the
// fake model that makes those calls, and the operator policy that lets
// every call through so only the sandbox stands in the way.
package sandboxtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
)

// WriteGoal is the goal of chat A's job: write Secret to notes.txt.
const WriteGoal = "write the secret"

// Secret is what chat A writes, and what no job of chat B may ever see.
const Secret = "chat-A-secret-7f3e9b"

// Route is one attempt of chat B to reach what is not its own: the tool
// call its fake model makes, and a text the result must show (the clear
// error the model sees).
type Route struct {
	Tool string
	Args map[string]any
	Want string
}

// Routes lists every way out the sandbox must close, given chat A's
// directory, the worker's ODEK_HOME, its pid and the Redis port.
func Routes(dirA, home string, workerPID int, redisPort string) map[string]Route {
	notes := filepath.Join(dirA, "notes.txt")
	rel := "../" + filepath.Base(dirA) + "/notes.txt" // chat B's directory is a sibling of A's
	sh := func(cmd, want string) Route { return Route{"shell", map[string]any{"command": cmd}, want} }
	outside := "outside this job's root"
	return map[string]Route{
		"read relative":     {"read_file", map[string]any{"path": rel}, outside},
		"read absolute":     {"read_file", map[string]any{"path": notes}, outside},
		"read planted link": {"read_file", map[string]any{"path": "planted"}, outside},
		"plant a link":      sh("ln -s "+notes+" planted && cat planted", "Permission denied"),
		"search parent":     {"search_files", map[string]any{"pattern": "secret", "path": ".."}, outside},
		"list root":         {"list_dir", map[string]any{"path": "/"}, outside},
		"list parent":       {"list_dir", map[string]any{"path": ".."}, outside},
		"write into A":      {"write_file", map[string]any{"path": rel, "content": "overwritten"}, outside},
		"shell cat":         sh("cat "+rel, "Permission denied"),
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

// Model is the fake model of the cross-tenant test: a job's goal
// names a route; its first call makes the route's tool call, the second
// answers with the tool result it was given.
type Model struct {
	mu      sync.Mutex
	routes  map[string]Route
	results map[string]string // goal → tool result text the model saw
}

// NewModel returns a Model with no routes yet.
func NewModel() *Model { return &Model{results: map[string]string{}} }

// SetRoutes sets the routes the model knows.
func (m *Model) SetRoutes(r map[string]Route) {
	m.mu.Lock()
	m.routes = r
	m.mu.Unlock()
}

// Routes returns the model's routes.
func (m *Model) Routes() map[string]Route {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.routes
}

// Result returns the tool result the model saw for goal.
func (m *Model) Result(goal string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[goal]
	return r, ok
}

func (m *Model) Handle(r llmtest.Recorded) llmtest.Turn {
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
	if goal == WriteGoal {
		return llmtest.CallTools(llmtest.Call{Name: "write_file", Arguments: fmt.Sprintf(`{"path":"notes.txt","content":%q}`, Secret)})
	}
	rt, ok := m.routes[goal]
	if !ok {
		return llmtest.Reply("unknown goal " + goal)
	}
	args, _ := json.Marshal(rt.Args)
	return llmtest.CallTools(llmtest.Call{Name: rt.Tool, Arguments: string(args)})
}

// RequireLandlock skips a test that needs the sandbox on a kernel
// without it, unless ODEK_REQUIRE_LANDLOCK is set (CI), where it fails.
func RequireLandlock(t *testing.T) {
	t.Helper()
	if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
		if os.Getenv("ODEK_REQUIRE_LANDLOCK") != "" {
			t.Fatalf("Landlock ABI %d < %d and ODEK_REQUIRE_LANDLOCK is set", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d < %d", abi, sandbox.RequiredABI)
	}
}

// Permissive is an operator policy that allows every class a tool may
// have: what stops chat B below is the sandbox, not the danger policy.
const Permissive = `{"dangerous":{"classes":{"local_write":"allow","system_write":"allow","code_execution":"allow","network_egress":"allow","destructive":"allow","unknown":"allow","install":"allow"}}}`

// Check fails t for every route whose tool result is missing, shows chat
// A's secret or the worker's environment, or lacks the route's clear
// error; and when chat A's directory (dirA) was changed.
func (m *Model) Check(t *testing.T, dirA string) {
	t.Helper()
	for name, rt := range m.Routes() {
		seen, ok := m.Result(name)
		switch {
		case !ok:
			t.Errorf("%s: the model never saw a tool result", name)
		case strings.Contains(seen, Secret):
			t.Errorf("%s: chat B's model saw chat A's secret:\n%s", name, seen)
		case strings.Contains(seen, dirA+"/notes.txt") && name == "shell find":
			t.Errorf("%s: find listed chat A's file:\n%s", name, seen)
		case strings.Contains(seen, "REDIS_URL") || strings.Contains(seen, "ODEK_API_KEY") || strings.Contains(seen, "sk-test-key"):
			t.Errorf("%s: the worker's environment leaked:\n%s", name, seen)
		case strings.Contains(seen, "odek:") && name == "shell redis-cli":
			t.Errorf("%s: Redis answered with queue keys:\n%s", name, seen)
		case !strings.Contains(seen, rt.Want):
			t.Errorf("%s: the result lacks %q:\n%s", name, rt.Want, seen)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dirA, "notes.txt")); string(b) != Secret {
		t.Errorf("chat A's file was changed: %q", b)
	}
	if ents, _ := os.ReadDir(dirA); len(ents) != 1 {
		t.Errorf("chat A's directory holds more than its file: %v", ents)
	}
}
