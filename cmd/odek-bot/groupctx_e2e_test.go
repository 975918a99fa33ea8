package main_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Issue 26 point 3 across processes: the group's chatter, kept by the real
// odek-bot, and the message a request replies to with the user's quote of
// it reach the model of a real `odek worker` (through Redis) as quoted,
// untrusted text before the request; the asking message gets the
// acknowledging reaction.
func TestE2EGroupContextReachesTheWorkersModel(t *testing.T) {
	const group = int64(-1001500)
	var mu sync.Mutex
	var reqs []llmtest.Recorded
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
		return llmtest.Reply("it is the linker")
	})
	in := newInstance(t, llm.URL, "ODEK_TELEGRAM_ALLOWED_CHATS=-1001500")
	in.worker("w1")
	in.tg.Send(bottest.Incoming{Chat: group, User: 1002, From: "Ben", Text: "the nightly build broke at step 7"})
	_, said := in.tg.Send(bottest.Incoming{Chat: group, User: 1003, From: "Cleo", Text: "linker ran out of memory again"})
	_, asked := in.tg.Send(bottest.Incoming{Chat: group, User: 1001, Text: "@" + bottest.BotUsername + " why does this keep happening?", ReplyTo: said, Quote: "out of memory"})
	in.tg.Wait(t, 60*time.Second, "the answer", func(s *bottest.Server) bool { return visible(s, group, "it is the linker") })
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	user := reqs[0].LastMessage().Content
	for _, want := range []string{"Ben: the nightly build broke at step 7", "replies to this message from Cleo", "<<<odek-untrusted", "The user quoted this part of it", "out of memory"} {
		if !strings.Contains(user, want) {
			t.Errorf("the model's user message lacks %q:\n%s", want, user)
		}
	}
	if !strings.HasSuffix(user, "why does this keep happening?") {
		t.Errorf("the request is not last:\n%s", user)
	}
	acked := false
	for _, r := range in.tg.Reactions(group) {
		acked = acked || (r.MessageID == asked && r.Emoji == "👀")
	}
	if !acked {
		t.Errorf("reactions %+v: want 👀 on the asking message %d", in.tg.Reactions(group), asked)
	}
}
