package main_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// TestE2ESentRecordSpokenAnswer: a spoken answer is a step of the durable
// "sent" record. A real odek-bot (embedded) speaks a short answer as one
// captioned voice note and is SIGKILLed right after the record is written;
// the next life sends neither the voice note nor the answer as text again,
// and answers the chat's next message.
func TestE2ESentRecordSpokenAnswer(t *testing.T) {
	_, odekBot := binaries(t)
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last, _ := json.Marshal(r.Messages[len(r.Messages)-1])
		if strings.Contains(string(last), "ping") {
			return llmtest.Reply("pong")
		}
		return llmtest.Reply("SPOKEN-ANSWER is short.")
	})
	tg := bottest.New(t)
	tts := bottest.NewSpeech(t)
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + t.TempDir(), "ODEK_ARTIFACTS_DIR=" + t.TempDir(), "ODEK_WORKERS=1",
		"ODEK_TELEGRAM_VOICE=on", "ODEK_TELEGRAM_SPEECH_URL=" + tts.URL(), "ODEK_TELEGRAM_SPEECH_API_KEY=" + tts.Key,
	}
	count := func() (voices, texts int) {
		for _, m := range tg.Messages(1001) {
			if !strings.Contains(m.Shown, "SPOKEN-ANSWER") {
				continue
			}
			if m.Voice != nil {
				voices++
			} else {
				texts++
			}
		}
		return
	}
	tg.UserMessage(1001, 1001, "say it")
	p := start(t, "odek-bot #1", odekBot, append(env, "ODEK_TEST_KILL_AFTER_SENT=1"))
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		v, x := count()
		t.Fatalf("odek-bot did not kill itself after the recorded voice note (voice notes %d, texts %d)", v, x)
	}
	if v, x := count(); v != 1 || x != 0 {
		t.Fatalf("first life: %d voice notes and %d text copies of the answer, want 1 and 0", v, x)
	}
	start(t, "odek-bot #2", odekBot, env)
	tg.UserMessage(1001, 1001, "ping")
	tg.Wait(t, 60*time.Second, "the next answer", func(s *bottest.Server) bool {
		for _, m := range s.Messages(1001) {
			if strings.Contains(m.Shown, "pong") {
				return true
			}
		}
		return false
	})
	if v, x := count(); v != 1 || x != 0 {
		t.Errorf("after the restart: %d voice notes and %d text copies of the answer, want 1 and 0 (chat %q)", v, x, tg.Visible(1001))
	}
}
