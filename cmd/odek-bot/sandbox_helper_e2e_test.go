package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/chatdir"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
)

// The image ships odek-sandbox beside odek and odek-bot, and a process
// that confines a command runs that binary, not itself (internal/sandbox,
// executable). These tests run the real odek-bot — embedded, and
// distributed with real Redis and a real `odek worker` — each beside a
// recording odek-sandbox: a two-line script that appends its first
// argument to a file and execs the real odek-sandbox in its place. A
// chat's shell command then reads a file outside its directory (the
// bot's or worker's home) and writes its own: the read is refused by
// the sandbox, the write lands, the chat is never shown the secret, and
// the record proves odek-sandbox confined the command (a command confined
// any other way leaves no line).

// besideHelper puts a copy of bin in a fresh directory with the recording
// odek-sandbox beside it and returns the copy and the record's path.
func besideHelper(t *testing.T, bin string) (copyPath, calls string) {
	t.Helper()
	real, err := bins.Build("github.com/odekrun/odek/cmd/odek-sandbox")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyPath = filepath.Join(dir, filepath.Base(bin))
	if err := os.Link(bin, copyPath); err != nil {
		src, err := os.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		dst, err := os.OpenFile(copyPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	calls = filepath.Join(t.TempDir(), "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> '%s'\nexec '%s' \"$@\"\n", calls, real)
	if err := os.WriteFile(filepath.Join(dir, sandbox.LeanHelper), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return copyPath, calls
}

func helperCalls(t *testing.T, calls string) int {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line == sandbox.HelperArg || line == sandbox.SuperviseArg { // a command, or a job's supervisor that starts them
			n++
		}
	}
	return n
}

// confinedShell is a fake model whose one tool call runs command in the
// shell; it records what the tool returned.
type confinedShell struct {
	mu   sync.Mutex
	seen string
}

func (m *confinedShell) handler(command string) func(llmtest.Recorded) llmtest.Turn {
	return func(r llmtest.Recorded) llmtest.Turn {
		for _, msg := range r.Messages {
			if msg.Role == "tool" {
				m.mu.Lock()
				m.seen = msg.Content
				m.mu.Unlock()
				return llmtest.Reply("checked")
			}
		}
		args, _ := json.Marshal(map[string]string{"command": command})
		return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
	}
}

func (m *confinedShell) result() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen
}

const helperSecret = "odek-bot-helper-secret-7c1d"

// secretHome is a home directory holding a file with helperSecret.
func secretHome(t *testing.T) (home, secret string) {
	home = t.TempDir()
	secret = filepath.Join(home, "home-notes.txt")
	if err := os.WriteFile(secret, []byte(helperSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, secret
}

func checkConfined(t *testing.T, tg *bottest.Server, model *confinedShell, dir, calls string) {
	t.Helper()
	tg.Wait(t, 60*time.Second, "the answer", func(s *bottest.Server) bool { return visible(s, 1001, "checked") })
	seen := model.result()
	if strings.Contains(seen, helperSecret) || !strings.Contains(seen, "Permission denied") {
		t.Errorf("the read outside the chat's directory was not refused; the model saw %q", seen)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mine.txt")); err != nil || strings.TrimSpace(string(b)) != "mine" {
		t.Errorf("the write inside the chat's directory did not land (%v, %q); the model saw %q", err, b, seen)
	}
	for _, m := range tg.Visible(1001) {
		if strings.Contains(m, helperSecret) {
			t.Errorf("the chat was shown the secret: %q", m)
		}
	}
	if n := helperCalls(t, calls); n < 1 {
		t.Errorf("odek-sandbox confined %d commands, want the shell command: it was confined another way or not at all", n)
	}
}

func TestEmbeddedBotConfinesThroughOdekSandbox(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	_, odekBot := binaries(t)
	bot, calls := besideHelper(t, odekBot)
	home, secret := secretHome(t)
	model := &confinedShell{}
	llm := llmtest.NewHandler(t, model.handler("cat "+secret+"; echo mine > mine.txt"))
	art := t.TempDir()
	tg := bottest.New(t)
	start(t, "odek-bot", bot, []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + art,
	})
	tg.UserMessage(1001, 1001, "check the sandbox")
	dir, err := chatdir.Ensure(art, 1001)
	if err != nil {
		t.Fatal(err)
	}
	checkConfined(t, tg, model, dir, calls)
}

func TestDistributedBotWorkerConfinesThroughOdekSandbox(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	home, secret := secretHome(t)
	model := &confinedShell{}
	llm := llmtest.NewHandler(t, model.handler("cat "+secret+"; echo mine > mine.txt"))
	in := newInstance(t, llm.URL)
	odek, calls := besideHelper(t, in.odek)
	art := ""
	for _, kv := range in.env {
		if v, ok := strings.CutPrefix(kv, "ODEK_ARTIFACTS_DIR="); ok {
			art = v
		}
	}
	start(t, "w1", odek, append(append([]string{}, in.env...), "ODEK_HOME="+home), "worker", "--name", "w1", "--approval-timeout", "30s")
	in.tg.UserMessage(1001, 1001, "check the sandbox")
	dir, err := chatdir.Ensure(art, 1001)
	if err != nil {
		t.Fatal(err)
	}
	checkConfined(t, in.tg, model, dir, calls)
}
