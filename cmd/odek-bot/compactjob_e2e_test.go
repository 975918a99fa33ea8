package main_test

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue/queuetest"
)

// newComposeInstance is newInstance as docker-compose runs it: the bot
// is given no model key (only its workers are), so it has no model client
// of its own.
func newComposeInstance(t *testing.T, llmURL string, extra ...string) *instance {
	odek, odekBot := binaries(t)
	srv := queuetest.StartServer(t, queuetest.ServerOptions{})
	in := &instance{t: t, tg: bottest.New(t), odek: odek, odekBot: odekBot}
	shared := append([]string{
		"REDIS_URL=redis://" + srv.Addr + "/0",
		"ODEK_ARTIFACTS_DIR=" + t.TempDir(),
		"ODEK_QUEUE_LEASE=2",
		"ODEK_BASE_URL=" + llmURL, "ODEK_MODEL=test-model",
	}, extra...)
	in.env = append([]string{"ODEK_API_KEY=sk-test-key-0123456789abcdef", "ODEK_HOME=" + t.TempDir()}, shared...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	in.healthOK = "http://" + addr + "/healthz"
	start(t, "odek-bot", odekBot, append([]string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + in.tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_HEALTH_ADDR=" + addr, "ODEK_HOME=" + t.TempDir(),
	}, shared...))
	in.tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) > 0 }, "setMyCommands")
	return in
}

// Issue 29: /compact in the compose bot, which has no model key. The
// compaction runs on a real `odek worker` as a compact job through real
// Redis: the worker makes the one digest side call (with its key), saves
// the chat's session, and reports before/after tokens on the job's
// progress stream; the chat is told once (the job's result adds no second
// message), /status shows the compaction, and the next job's request
// carries the digest instead of the folded turns. On the old code the
// compose bot answered that /compact is not available.
func TestE2EComposeCompactRunsOnAWorker(t *testing.T) {
	var mu sync.Mutex
	var lastReq []llm.Message
	digestCalls, keyless := 0, 0
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(r.Header.Get("Authorization"), "sk-test-key") {
			keyless++
		}
		if len(r.Messages) > 0 && r.Messages[0].Role == "system" && strings.Contains(r.Messages[0].Content, "You keep the memory of a long conversation") {
			digestCalls++
			turn := llmtest.Reply("## Facts\n- the user's cat is called Mimi\n- key sk-test-key-0123456789abcdef")
			turn.Usage = &llm.Usage{PromptTokens: 400, CompletionTokens: 20}
			return turn
		}
		lastReq = r.Messages
		goal := r.Messages[len(r.Messages)-1].Content
		turn := llmtest.Reply("noted: " + goal)
		turn.Usage = &llm.Usage{PromptTokens: 100, CompletionTokens: 10}
		return turn
	})
	in := newComposeInstance(t, model.URL, "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	for _, m := range []string{"my cat is called Mimi", "I live in Bonn", "I like tea", "I work at night"} {
		in.tg.UserMessage(1001, 1001, m)
		in.tg.Wait(t, 60*time.Second, "the answer to "+m, func(s *bottest.Server) bool { return visible(s, 1001, "noted: "+m) })
	}
	in.tg.UserMessage(1001, 1001, "/compact")
	in.tg.Wait(t, 90*time.Second, "the compaction", func(s *bottest.Server) bool {
		return visible(s, 1001, "🗜 Compacted") || visible(s, 1001, "could not be compacted") || visible(s, 1001, "not available")
	})
	if !visible(in.tg, 1001, "🗜 Compacted: ") {
		t.Fatalf("no compaction: %q", in.tg.Visible(1001))
	}
	in.tg.UserMessage(1001, 1001, "/status")
	in.tg.Wait(t, 30*time.Second, "the gauge", func(s *bottest.Server) bool { return visible(s, 1001, "· compacted ") })
	in.tg.UserMessage(1001, 1001, "what is my cat called?")
	in.tg.Wait(t, 60*time.Second, "the answer after /compact", func(s *bottest.Server) bool { return visible(s, 1001, "noted: what is my cat called?") })
	// The compaction job's result came to the chat before the next answer
	// (the chat's actor delivers in order): it must not have been shown.
	if visible(in.tg, 1001, "message groups folded into the digest") {
		t.Errorf("the compaction job's result was shown besides the chat's own report: %q", in.tg.Visible(1001))
	}
	mu.Lock()
	defer mu.Unlock()
	if digestCalls != 1 || keyless != 0 {
		t.Errorf("%d digest side calls (want 1), %d model calls without the worker's key (want 0)", digestCalls, keyless)
	}
	var digest, folded, leaked bool
	for _, m := range lastReq {
		digest = digest || strings.Contains(m.Content, "[odek: digest") && strings.Contains(m.Content, "Mimi")
		folded = folded || m.Content == "I live in Bonn"
		leaked = leaked || strings.Contains(m.Content, "0123456789abcdef")
	}
	if !digest || folded || leaked {
		t.Errorf("the request after /compact: digest %v, folded turn still there %v, key in the digest %v", digest, folded, leaked)
	}
}
