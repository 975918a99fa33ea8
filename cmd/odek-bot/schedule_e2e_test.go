package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/schedule"
)

// Embedded mode fires schedules from the store file `odek schedule` writes
// ($ODEK_HOME/schedules.json): a goal due in a second runs on the bot's own
// worker and its answer reaches the chat, with no message typed.
func TestE2EEmbeddedScheduleFires(t *testing.T) {
	odek, odekBot := binaries(t)
	llm := llmtest.New(t, llmtest.Reply("scheduled *answer*"))
	tg := bottest.New(t)
	home := t.TempDir()
	sv := &schedule.Service{Store: schedule.NewFile(filepath.Join(home, "schedules.json")), Limits: schedule.Limits{MinInterval: time.Second}}
	if _, err := sv.Create(context.Background(), schedule.Owner{ChatID: 1001, UserID: 1001},
		schedule.Schedule{Spec: "in 2s", Text: "summarise the open issues"}); err != nil {
		t.Fatal(err)
	}
	start(t, "odek-bot", odekBot, []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	})
	tg.Wait(t, 30*time.Second, "scheduled reply", func(s *bottest.Server) bool { return visible(s, 1001, "scheduled answer") })
	// The file was imported into the embedded store (and renamed); the
	// chat's commands work on that store.
	if _, err := os.Stat(filepath.Join(home, "schedules.json.imported")); err != nil {
		t.Errorf("the old schedules file was not imported: %v", err)
	}
	tg.UserMessage(1001, 1001, "/schedule")
	tg.Wait(t, 30*time.Second, "the imported schedule listed", func(s *bottest.Server) bool {
		return visible(s, 1001, "summarise the open issues") && visible(s, 1001, "Schedules (times in UTC)")
	})
	calls := llm.Calls()
	tg.UserMessage(1001, 1001, "/remind in 1s ping")
	tg.Wait(t, 30*time.Second, "the reminder", func(s *bottest.Server) bool { return visible(s, 1001, "⏰ ping") })
	if llm.Calls() != calls {
		t.Errorf("the reminder called the model")
	}
	// `odek schedule add` without Redis, while the bot runs: the bot picks
	// the schedule up from the file store and fires it.
	cmd := exec.Command(odek, "schedule", "add", "--chat", "1001", "--at", time.Now().Add(2*time.Second).UTC().Format(time.RFC3339), "--message", "from the cli")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "ODEK_HOME=" + home}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("odek schedule add: %v %s", err, out)
	}
	tg.Wait(t, 30*time.Second, "the CLI's reminder", func(s *bottest.Server) bool { return visible(s, 1001, "⏰ from the cli") })
}

// Issue 27 end to end, distributed: real redis-server, a real `odek
// worker` and odek-bot against the fake Bot API and the fake model.
//   - /remind in 2s: the reminder reaches the chat with no model call.
//   - The model's schedule tool: "remind me …" makes the model call the
//     tool; the chat gets an approval keyboard naming the schedule; the
//     user approves; the schedule exists for this chat and its reminder
//     arrives later.
//   - A quiet check-in with nothing to report sends nothing.
func TestE2EScheduleRemindToolAndQuiet(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last := r.LastMessage()
		mu.Lock()
		calls = append(calls, last.Content)
		mu.Unlock()
		switch {
		case strings.Contains(last.Content, schedule.QuietNothing):
			return llmtest.Reply(schedule.QuietNothing)
		case last.Role == "tool":
			return llmtest.Reply("Done: " + last.Content)
		case strings.Contains(last.Content, "remind me"):
			return llmtest.CallTools(llmtest.Call{ID: "s1", Name: "schedule",
				Arguments: `{"action":"create","when":"in 4s","text":"drink some water","kind":"message"}`})
		}
		return llmtest.Reply("answer to: " + last.Content)
	})
	in := newInstance(t, llm.URL)
	in.worker("w1")
	const chat = 1001

	in.tg.UserMessage(chat, chat, "/remind in 2s stretch your legs")
	in.tg.Wait(t, 30*time.Second, "reminder set", func(s *bottest.Server) bool { return visible(s, chat, "✅ Reminder set") })
	in.tg.Wait(t, 30*time.Second, "the reminder", func(s *bottest.Server) bool {
		for _, m := range s.Visible(chat) {
			if strings.HasPrefix(m, "⏰ stretch your legs") {
				return true
			}
		}
		return false
	})
	if n := llm.Calls(); n != 0 {
		t.Fatalf("the reminder called the model %d times", n)
	}

	in.tg.UserMessage(chat, chat, "remind me in a few seconds to drink some water")
	var kb bottest.Message
	in.tg.Wait(t, 30*time.Second, "the schedule tool's confirmation", func(s *bottest.Server) bool {
		for _, m := range s.Messages(chat) {
			if len(m.Keyboard) > 0 && strings.Contains(m.Shown, "schedule") && strings.Contains(m.Shown, "drink some water") && !m.Deleted {
				kb = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(kb.Shown, "action: create") || !strings.Contains(kb.Shown, "kind: message") {
		t.Errorf("confirmation %q", kb.Shown)
	}
	in.tg.PressButton(chat, chat, kb.ID, kb.Keyboard[0][0])
	in.tg.Wait(t, 30*time.Second, "the model's answer", func(s *bottest.Server) bool { return visible(s, chat, "Done: Scheduled ") })
	in.tg.Wait(t, 30*time.Second, "the tool's reminder", func(s *bottest.Server) bool {
		for _, m := range s.Visible(chat) {
			if strings.HasPrefix(m, "⏰ drink some water") {
				return true
			}
		}
		return false
	})
	in.tg.UserMessage(chat, chat, "/schedule")
	in.tg.Wait(t, 30*time.Second, "the list", func(s *bottest.Server) bool {
		return visible(s, chat, "Schedules (times in UTC)") && visible(s, chat, "drink some water")
	})

	before := llm.Calls()
	in.tg.UserMessage(chat, chat, "/schedule add --quiet in 2s check the inbox")
	in.tg.Wait(t, 30*time.Second, "scheduled", func(s *bottest.Server) bool { return visible(s, chat, "✅ Scheduled") })
	for deadline := time.Now().Add(30 * time.Second); llm.Calls() == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the quiet check-in did not call the model within 30s")
		}
	}
	// The chat's next job runs after the check-in (one job per chat at a
	// time); once its answer is shown, the check-in's result was handled.
	in.tg.UserMessage(chat, chat, "/remind in 1s after the check-in")
	in.tg.Wait(t, 30*time.Second, "the later reminder", func(s *bottest.Server) bool { return visible(s, chat, "⏰ after the check-in") })
	for _, m := range in.tg.Visible(chat) {
		if strings.Contains(m, schedule.QuietNothing) || strings.Contains(m, "check the inbox") && !strings.Contains(m, "Scheduled") {
			t.Errorf("the quiet check-in spoke: %q", m)
		}
	}
}
