package main_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Issue 26 point 2: two topics of a forum run their jobs at the same time
// on real workers fed through real Redis — each topic's model call waits
// until the other topic's has arrived (run one after the other, neither
// would answer) — and each answer lands in its own topic, through a fake
// Bot API that refuses a wrong message_thread_id.
func TestE2EForumTopicPairRunsConcurrently(t *testing.T) {
	var mu sync.Mutex
	arrived := map[string]bool{}
	both := make(chan struct{})
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		goal := r.LastMessage().Content
		name := "other"
		for _, n := range []string{"alpha", "beta"} {
			if strings.Contains(goal, n) {
				name = n
			}
		}
		mu.Lock()
		arrived[name] = true
		if arrived["alpha"] && arrived["beta"] {
			select {
			case <-both:
			default:
				close(both)
			}
		}
		mu.Unlock()
		select {
		case <-both:
			return llmtest.Reply("answer in " + name)
		case <-time.After(20 * time.Second):
			return llmtest.Reply("ran alone in " + name)
		}
	})
	const forum = int64(-1001500)
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1", "ODEK_TELEGRAM_ALLOWED_CHATS=-1001500")
	in.worker("w1")
	in.worker("w2")
	in.tg.Forum(forum)
	alpha := in.tg.NewTopic(forum, 1001, "Alpha")
	beta := in.tg.NewTopic(forum, 1001, "Beta")
	at := "@" + bottest.BotUsername + " "
	in.tg.TopicMessage(forum, 1001, alpha, at+"alpha task")
	in.tg.TopicMessage(forum, 1001, beta, at+"beta task")
	in.tg.Wait(t, 90*time.Second, "both answers", func(s *bottest.Server) bool {
		return (visible(s, forum, "answer in alpha") || visible(s, forum, "ran alone in alpha")) &&
			(visible(s, forum, "answer in beta") || visible(s, forum, "ran alone in beta"))
	})
	if visible(in.tg, forum, "ran alone") {
		t.Fatalf("the topics' jobs did not run at the same time: %q", in.tg.Visible(forum))
	}
	threads := in.tg.Threads(forum)
	for shown, th := range threads {
		switch {
		case strings.Contains(shown, "answer in alpha") && th != alpha, strings.Contains(shown, "answer in beta") && th != beta:
			t.Errorf("%q went to thread %d (alpha %d, beta %d)", shown, th, alpha, beta)
		}
	}
	for _, c := range in.tg.Calls("sendMessage", "sendChatAction", "sendMessageDraft") {
		if c.Status != 200 {
			t.Errorf("%s refused: %d %s", c.Method, c.Status, c.Description)
		}
	}
}
