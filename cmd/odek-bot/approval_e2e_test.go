package main_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Issue 26 point 6, across processes: a real `odek worker` asks for an
// approval through Redis; the odek-bot process that showed the prompt (in
// the chat and in an approver's private chat) is killed and a new one
// started; the user presses "Allow for this session" on the old prompt.
// The new bot, which never saw the question, reads it from Redis, answers
// it, and closes both copies; the job's second identical command runs
// without a second prompt (the session grant, honoured by the worker); the
// answer arrives.
func TestE2EApprovalPressedAfterBotRestart(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	const shell = `{"command":"python3 -c 'print(6*7)'"}`
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 1:
			return llmtest.CallTools(llmtest.Call{ID: "s1", Name: "shell", Arguments: shell})
		case 2:
			return llmtest.CallTools(llmtest.Call{ID: "s2", Name: "shell", Arguments: shell})
		}
		return llmtest.Reply("Computed twice.")
	})
	in := newInstance(t, llm.URL, "ODEK_TELEGRAM_APPROVERS=1003")
	start(t, "w1", in.odek, in.env, "worker", "--name", "w1", "--approval-timeout", "90s")
	bot1 := in.bots[0]

	in.tg.UserMessage(1001, 1001, "compute 6*7 twice")
	prompt := keyboardIn(t, in.tg, 1001)
	dm := keyboardIn(t, in.tg, 1003)
	if len(prompt.Keyboard) != 2 || !strings.HasSuffix(prompt.Keyboard[1][0], ":s") || !strings.Contains(dm.Shown, "python3 -c") {
		t.Fatalf("prompt %q %v; approver's copy %q", prompt.Shown, prompt.Keyboard, dm.Shown)
	}
	// Both prompts noted in Redis, then the bot is killed (no shutdown
	// path runs) and another started.
	rc := redis.NewClient(&redis.Options{Addr: in.redis})
	defer rc.Close()
	in.tg.Wait(t, 30*time.Second, "prompts noted in Redis", func(*bottest.Server) bool {
		keys, _ := rc.Keys(context.Background(), "*approvalp:*").Result()
		return len(keys) == 1 && rc.LLen(context.Background(), keys[0]).Val() == 2
	})
	bot1.kill()
	in.startBot()
	in.tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) >= 2 }, "setMyCommands")

	in.tg.PressButton(1001, 1001, prompt.ID, prompt.Keyboard[1][0])
	in.tg.Wait(t, 60*time.Second, "answer", func(s *bottest.Server) bool { return visible(s, 1001, "Computed twice.") })
	for _, chat := range []int64{1001, 1003} {
		in.tg.Wait(t, 30*time.Second, "prompt closed", func(s *bottest.Server) bool { return visible(s, chat, "♾ Allowed for this session by user1001") })
	}
	prompts := 0
	for _, c := range in.tg.Calls("sendMessage") {
		if c.Params.Get("chat_id") == "1001" && strings.Contains(c.Params.Get("text"), "Approval needed") {
			prompts++
		}
	}
	if prompts != 1 {
		t.Errorf("%d approval prompts in the chat, want 1 (the second identical command is allowed for the session)", prompts)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
}

// keyboardIn waits for a message with an inline keyboard in chat.
func keyboardIn(t *testing.T, tg *bottest.Server, chat int64) bottest.Message {
	t.Helper()
	var kb bottest.Message
	tg.Wait(t, 30*time.Second, "approval keyboard", func(s *bottest.Server) bool {
		for _, m := range s.Messages(chat) {
			if len(m.Keyboard) > 0 {
				kb = m
				return true
			}
		}
		return false
	})
	return kb
}
