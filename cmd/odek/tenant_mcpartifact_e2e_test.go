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
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/mcpclient/mcptest"
	"github.com/odekrun/odek/queue"
)

// A job-scoped MCP server runs confined in its chat's jail, but the
// client that validates and reads the artifact refs it returns runs
// unconfined in the worker (found by the adversarial pass of issue 21).
// Through a real worker and real Redis, with the fixture server given
// artifact_roots spanning the chats directory (every job's root lies
// there), chat 72's server returns a ref naming chat 71's file and chat
// 72's model reads it with artifact_read. On main the worker validated
// the ref against the operator's roots and read chat 71's secret into
// chat 72; now a jailed server's roots narrow to its job's root and the
// ref is refused.
func TestWorkerJobScopedMCPArtifactStaysInItsChat(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	fixture, err := mcptest.BuildFixture()
	if err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	victim, attacker := chatDir(t, artifacts, 71), chatDir(t, artifacts, 72)
	for _, d := range []string{victim, attacker} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	secretFile := filepath.Join(victim, "notes.txt")
	if err := os.WriteFile(secretFile, []byte(sandboxtest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		_, res := currentTurn(r)
		mu.Lock()
		seen = append([]string(nil), res...)
		mu.Unlock()
		switch len(res) {
		case 0:
			args, _ := json.Marshal(map[string]string{"kind": "path:" + secretFile})
			return llmtest.CallTools(llmtest.Call{ID: "a", Name: "art__bad_artifact", Arguments: string(args)})
		case 1:
			return llmtest.CallTools(llmtest.Call{ID: "r", Name: "artifact_read", Arguments: `{"id":"art/art-1"}`})
		}
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 1)
	config, _ := json.Marshal(map[string]any{
		"sandbox": map[string]any{"read_only_paths": []string{filepath.Dir(fixture)}},
		"mcp_servers": map[string]any{"art": map[string]any{
			"command": fixture, "scope": "job", "auto_approve": true, "required": true,
			"artifact_roots": []string{artifacts},
		}},
	})
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", "--artifacts", artifacts)
	j := e.enqueue(queue.Job{ChatID: 72, UserID: 72, Goal: "fetch", IdempotencyKey: "mcp-art"})
	res := e.results(120*time.Second, j.ID)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatalf("the model saw no tool result (%+v)\n%s", res[j.ID], w.stderr.String())
	}
	for _, s := range seen {
		if strings.Contains(s, sandboxtest.Secret) {
			t.Errorf("chat 72's model read chat 71's file through its server's artifact ref: %q", seen)
			break
		}
	}
	if !strings.Contains(strings.Join(seen, "\n"), "outside") {
		t.Errorf("the ref was not refused as outside the roots: %q", seen)
	}
}
