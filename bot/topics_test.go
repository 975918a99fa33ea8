package bot

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/queue"
)

// Issue 26 point 2: in a forum, each topic is its own conversation. Two
// topics' jobs run at the same time (each waits until the other started:
// run one after the other, the test would hang), each job continues its
// own topic's session in its own queue lane, and every message the bot
// sends for a topic — status, answer — goes to that topic, through a fake
// Bot API that refuses a thread id the chat does not have. A message in
// the General topic is answered in General (no thread id).
func TestForumTopicsAreParallelConversations(t *testing.T) {
	const forum = int64(-100500)
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{forum}; c.GroupSession = "group" })
	h.tg.Forum(forum)
	ideas := h.tg.NewTopic(forum, alice, "Ideas")
	bugs := h.tg.NewTopic(forum, alice, "Bugs")

	var mu sync.Mutex
	started := map[string]chan struct{}{"ideas": make(chan struct{}), "bugs": make(chan struct{})}
	sessions := map[string]string{}
	lanes := map[string]string{}
	run := func(ctx context.Context, l queue.Lease) queue.Result {
		name := "general"
		switch {
		case strings.Contains(l.Job.Goal, "ideas"):
			name = "ideas"
		case strings.Contains(l.Job.Goal, "bugs"):
			name = "bugs"
		}
		mu.Lock()
		sessions[name], lanes[name] = l.Job.SessionID, l.Job.Lane
		mu.Unlock()
		if name != "general" {
			other := map[string]string{"ideas": "bugs", "bugs": "ideas"}[name]
			close(started[name])
			select { // both topics' jobs run at once
			case <-started[other]:
			case <-ctx.Done():
				return queue.Result{Status: queue.StatusFailed, Error: "canceled"}
			}
		}
		return queue.Result{Answer: "answer for " + name}
	}
	worker(t, q, run) // two workers: the topics' jobs can run at once
	worker(t, q, run)
	at := "@" + bottest.BotUsername + " "
	h.tg.TopicMessage(forum, alice, ideas, at+"collect ideas")
	h.tg.TopicMessage(forum, alice, bugs, at+"triage bugs")
	h.waitVisible(forum, "answer for ideas")
	h.waitVisible(forum, "answer for bugs")
	h.tg.TopicMessage(forum, alice, 0, at+"hello general")
	h.waitVisible(forum, "answer for general")

	threads := h.tg.Threads(forum)
	for text, want := range map[string]int{"answer for ideas": ideas, "answer for bugs": bugs, "answer for general": 0} {
		found := false
		for shown, th := range threads {
			if strings.Contains(shown, text) {
				found = true
				if th != want {
					t.Errorf("%q went to thread %d, want %d", text, th, want)
				}
			}
		}
		if !found {
			t.Errorf("%q not among the chat's messages %v", text, threads)
		}
	}
	for _, c := range h.tg.Calls("sendMessage", "sendChatAction") {
		if c.Status != 200 {
			t.Errorf("%s refused: %d %s (params %v)", c.Method, c.Status, c.Description, c.Params)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if sessions["ideas"] == sessions["bugs"] || sessions["ideas"] == sessions["general"] || sessions["ideas"] == "" {
		t.Errorf("sessions %v: each topic needs its own", sessions)
	}
	if lanes["ideas"] == lanes["bugs"] || lanes["ideas"] == "" || lanes["general"] != "" {
		t.Errorf("lanes %v: each topic its own, General the main lane", lanes)
	}
}

// The strict fake refuses what Telegram refuses: a thread id in a chat
// that is not a forum, an unknown topic, and 1 for the General topic; the
// client puts the context's topic only on methods that take one.
func TestFakeIsStrictAboutMessageThreadID(t *testing.T) {
	srv := bottest.New(t)
	const forum = int64(-100600)
	srv.Forum(forum)
	topic := srv.NewTopic(forum, alice, "T")
	ctx := context.Background()
	tg, err := tgclient.Connect(ctx, tgclient.Options{Token: bottest.Token, APIEndpoint: srv.URL() + "/bot%s/%s"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(chat int64, thread int) (tgclient.Kind, error) {
		_, kind, err := tg.SendPlain(tgclient.WithThread(ctx, thread), chat, "x", nil)
		return kind, err
	}
	if _, err := send(forum, topic); err != nil {
		t.Fatalf("send to an open topic: %v", err)
	}
	for _, tc := range []struct {
		chat   int64
		thread int
	}{{alice, topic}, {forum, topic + 1000}, {forum, 1}} {
		if _, err := send(tc.chat, tc.thread); err == nil || !strings.Contains(err.Error(), "message thread not found") {
			t.Errorf("send to chat %d thread %d: %v, want message thread not found", tc.chat, tc.thread, err)
		}
	}
	if _, err := tg.Remove(tgclient.WithThread(ctx, topic+1000), forum, 1); err != nil && strings.Contains(err.Error(), "thread") {
		t.Errorf("deleteMessage took the context's topic: %v", err)
	}
}

// The daily budget is the chat's, not each topic's: what one topic spent
// counts when another topic asks, so opening topics does not multiply the
// budget.
func TestForumTopicsShareTheChatsDailyBudget(t *testing.T) {
	const forum = int64(-100700)
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.AllowedChats = []int64{forum}
		c.DailyTokenBudget = 1000
		c.UserJobsPerMinute = -1
	})
	a := h.tg.NewTopic(forum, alice, "A")
	b := h.tg.NewTopic(forum, alice, "B")
	caps := make(chan int, 4)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		caps <- l.Job.Budget.MaxTotalTokens
		return queue.Result{Answer: "spent in " + l.Job.Lane, Usage: queue.Usage{PromptTokens: 900, CompletionTokens: 50}}
	})
	at := "@" + bottest.BotUsername + " "
	h.tg.TopicMessage(forum, alice, a, at+"spend")
	h.waitVisible(forum, "spent in t")
	<-caps
	h.tg.TopicMessage(forum, alice, b, at+"spend more")
	h.waitVisible(forum, "spent in t"+strconv.Itoa(b))
	if c := <-caps; c != 50 {
		t.Fatalf("topic B's job got a cap of %d tokens, want the 50 the chat's day has left after topic A's 950", c)
	}
}
