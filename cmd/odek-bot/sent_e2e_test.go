package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue/queuetest"
)

// longAnswer is an answer Telegram takes in three messages: three
// paragraphs of ~3,000 characters, each opening with its own mark.
func longAnswer() string {
	var parts []string
	for _, mark := range []string{"PART-A", "PART-B", "PART-C"} {
		parts = append(parts, mark+" "+strings.Repeat("word ", 600))
	}
	return strings.Join(parts, "\n\n")
}

// TestE2ESentRecordNoDuplicateChunks: a real odek-bot is SIGKILLed right
// after Telegram accepted a chunk of a three-chunk answer and its "sent"
// record was written (ODEK_TEST_KILL_AFTER_SENT=1: each life delivers one
// chunk and dies; the third dies after the last chunk, before the result
// is acknowledged), and restarted each time on the same store. The strict
// fake Bot API ends up with exactly one copy of each chunk, in order, and
// the fourth life sends none of them again. In embedded mode and in
// distributed mode (Redis and a separate `odek worker`).
func TestE2ESentRecordNoDuplicateChunks(t *testing.T) {
	for _, mode := range []string{"embedded", "redis"} {
		t.Run(mode, func(t *testing.T) { testSentRecord(t, mode) })
	}
}

func testSentRecord(t *testing.T, mode string) {
	odek, odekBot := binaries(t)
	answer := longAnswer()
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last, _ := json.Marshal(r.Messages[len(r.Messages)-1])
		if strings.Contains(string(last), "ping") {
			return llmtest.Reply("pong")
		}
		return llmtest.Reply(answer)
	})
	tg := bottest.New(t)
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + t.TempDir(), "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	}
	if mode == "redis" {
		srv := queuetest.StartServer(t, queuetest.ServerOptions{})
		env = append(env, "REDIS_URL=redis://"+srv.Addr+"/0", "ODEK_QUEUE_RESULT_LEASE=1")
		start(t, "odek worker", odek, env, "worker", "--name", "w1")
	} else {
		env = append(env, "ODEK_WORKERS=1")
	}
	count := func() map[string]int {
		n := map[string]int{}
		for _, m := range tg.Messages(1001) {
			for _, mark := range []string{"PART-A", "PART-B", "PART-C", "pong"} {
				if strings.Contains(m.Shown, mark) {
					n[mark]++
				}
			}
		}
		return n
	}
	tg.UserMessage(1001, 1001, "write the long report")
	for life, want := range []string{"PART-A", "PART-B", "PART-C"} {
		p := start(t, fmt.Sprintf("odek-bot #%d", life+1), odekBot, append(env, "ODEK_TEST_KILL_AFTER_SENT=1"))
		select {
		case <-p.exited:
		case <-time.After(90 * time.Second):
			t.Fatalf("life %d: odek-bot did not kill itself after a recorded chunk; messages %v", life+1, count())
		}
		if st := p.cmd.ProcessState; st.Exited() {
			t.Fatalf("life %d: odek-bot exited with %d instead of being killed:\n%s", life+1, st.ExitCode(), p.out.String())
		}
		got := count()
		if got[want] != 1 {
			t.Fatalf("life %d: %s sent %d times, want once (messages %v)", life+1, want, got[want], got)
		}
	}
	// The fourth life: nothing of the answer is left to send; the next
	// message of the chat is answered after the result was acknowledged.
	start(t, "odek-bot (last)", odekBot, env)
	tg.UserMessage(1001, 1001, "ping")
	tg.Wait(t, 60*time.Second, "the next answer", func(s *bottest.Server) bool { return visible(s, 1001, "pong") })
	got := count()
	for _, mark := range []string{"PART-A", "PART-B", "PART-C", "pong"} {
		if got[mark] != 1 {
			t.Errorf("%s sent %d times, want exactly once", mark, got[mark])
		}
	}
	var order []string
	for _, m := range tg.Messages(1001) {
		if i := strings.Index(m.Shown, "PART-"); i >= 0 && !m.Deleted {
			order = append(order, m.Shown[i:i+6])
		}
	}
	if strings.Join(order, ",") != "PART-A,PART-B,PART-C" {
		t.Errorf("chunks in the chat: %v; want PART-A, PART-B, PART-C", order)
	}
	if t.Failed() {
		t.Logf("chat: %q", tg.Visible(1001))
	}
}
