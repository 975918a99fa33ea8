package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// Landlock does not mediate stat(2) or O_PATH opens, so a confined job
// that can name another chat's file learns whether it exists, its size
// and its times. Through a real worker and Redis: chat 2's job writes a
// file; chat 1's job knows chat 2's id and the file's name and probes it
// by the path the worker used to give chat 2 (<artifacts>/2/…), by
// listing the chats directory, and by reading the key that names the
// directories. Each fails: chat directories are named by an HMAC of the
// chat id under a key no job can read (package chatdir).
func TestWorkerChatDirectoriesCannotBeProbed(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	const secret = "chat two's plans, 29 bytes.."
	var mu sync.Mutex
	seen := map[string]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) > 0 {
			mu.Lock()
			seen[g] = strings.Join(res, "\n")
			mu.Unlock()
			return llmtest.Reply("done")
		}
		switch g {
		case "write":
			return llmtest.CallTools(llmtest.Call{ID: "w", Name: "write_file", Arguments: fmt.Sprintf(`{"path":"plans.txt","content":%q}`, secret)})
		case "probe":
			cmd := `p=$(dirname "$PWD"); stat -c 'SIZE=%s' "$p/2/plans.txt"; echo "stat=$?"; ` +
				`python3 -c 'import os,sys; os.open(sys.argv[1], os.O_PATH); print("OPATH-OK")' "$p/2/plans.txt"; ` +
				`ls "$p"; echo "ls=$?"; cat "$p/.odek-chat-key" >/dev/null; echo "key=$?"; ` +
				`stat -c 'OWN=%s' own.txt`
			return llmtest.CallTools(
				llmtest.Call{ID: "o", Name: "write_file", Arguments: `{"path":"own.txt","content":"mine"}`},
				llmtest.Call{ID: "s", Name: "shell", Arguments: fmt.Sprintf(`{"command":%q}`, cmd)})
		}
		return llmtest.Reply("unknown goal " + g)
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts)

	b := e.enqueue(queue.Job{ChatID: 2, UserID: 2, Goal: "write", IdempotencyKey: "b"})
	if res := e.results(60*time.Second, b.ID)[b.ID]; res.Status != queue.StatusSucceeded || len(res.Artifacts) != 1 {
		t.Fatalf("chat 2's job: %+v\n%s", res, w.stderr.String())
	}
	a := e.enqueue(queue.Job{ChatID: 1, UserID: 1, Goal: "probe", IdempotencyKey: "a"})
	if res := e.results(60*time.Second, a.ID)[a.ID]; res.Status != queue.StatusSucceeded {
		t.Fatalf("chat 1's job: %+v\n%s", res, w.stderr.String())
	}
	mu.Lock()
	out := seen["probe"]
	mu.Unlock()
	if !strings.Contains(out, "OWN=4") {
		t.Fatalf("the probe did not run: %q", out)
	}
	if strings.Contains(out, fmt.Sprintf("SIZE=%d", len(secret))) || !strings.Contains(out, "stat=1") {
		t.Errorf("chat 1's job learned chat 2's file by stat(2):\n%s", out)
	}
	if strings.Contains(out, "OPATH-OK") {
		t.Errorf("chat 1's job opened chat 2's file with O_PATH:\n%s", out)
	}
	if !strings.Contains(out, "ls=2") || !strings.Contains(out, "key=1") {
		t.Errorf("chat 1's job listed the chats directory or read the key:\n%s", out)
	}
	// Chat 2's file is where the worker put it: the probe failed for the
	// name, not for want of a file.
	if got, err := os.ReadFile(filepath.Join(chatDir(t, artifacts, 2), "plans.txt")); err != nil || string(got) != secret {
		t.Fatalf("chat 2's file: %q %v", got, err)
	}
}
