package main_test

import (
	"context"
	"path/filepath"
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
	_, odekBot := binaries(t)
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
	l, _ := sv.Store.List(context.Background(), 1001)
	if len(l) != 1 || l[0].Fires != 1 || l[0].Enabled {
		t.Fatalf("after the fire: %+v", l)
	}
}
