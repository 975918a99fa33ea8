package main_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/chatdir"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
)

// Embedded mode: the bot's own workers serve two chats. Chat 1001 writes
// a file; chat 1002 tries every route to it, to the bot's secrets and to a
// TCP service on the machine (the fake model's port); each fails.
func TestEmbeddedTenantsAreIsolated(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	_, odekBot := binaries(t)
	model := sandboxtest.NewModel()
	llm := llmtest.NewHandler(t, model.Handle)
	u, _ := url.Parse(llm.URL)
	home, art := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(sandboxtest.Permissive), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := bottest.New(t)
	bot := start(t, "odek-bot", odekBot, []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001,1002", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1",
		"ODEK_ARTIFACTS_DIR=" + art, "ODEK_HOME=" + home,
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
	})
	dirA, err := chatdir.Ensure(art, 1001)
	if err != nil {
		t.Fatal(err)
	}
	model.SetRoutes(sandboxtest.Routes(dirA, home, bot.cmd.Process.Pid, u.Port()))

	tg.UserMessage(1001, 1001, sandboxtest.WriteGoal)
	waitFor(t, 60*time.Second, "chat 1001's file", func() bool {
		b, _ := os.ReadFile(filepath.Join(dirA, "notes.txt"))
		return string(b) == sandboxtest.Secret
	})
	tg.UserMessage(1002, 1002, "plant a link")
	waitFor(t, 60*time.Second, "the planted link", func() bool { _, ok := model.Result("plant a link"); return ok })
	for name := range model.Routes() {
		if name != "plant a link" {
			tg.UserMessage(1002, 1002, name)
		}
	}
	waitFor(t, 180*time.Second, "every route's tool result", func() bool {
		for name := range model.Routes() {
			if _, ok := model.Result(name); !ok {
				return false
			}
		}
		return true
	})
	model.Check(t, dirA)
	for _, m := range tg.Visible(1002) {
		if strings.Contains(m, sandboxtest.Secret) {
			t.Errorf("chat 1002 was shown chat 1001's secret: %q", m)
		}
	}
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, within)
		}
	}
}
