package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
	"github.com/odekrun/odek/schedule"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// webhookBot is one odek-bot replica serving a webhook on its own address.
type webhookBot struct {
	addr string
	next int
}

const hookSecret = "budget-e2e_secret"

// post hands the replica an update, as Telegram would (retrying while the
// replica starts).
func (w *webhookBot) post(t *testing.T, updateID int, chat, user int64, text string) {
	t.Helper()
	w.next++
	body, _ := json.Marshal(tgbotapi.Update{UpdateID: updateID, Message: &tgbotapi.Message{MessageID: updateID,
		From: &tgbotapi.User{ID: user}, Chat: &tgbotapi.Chat{ID: chat, Type: "private"}, Text: text, Date: int(time.Now().Unix())}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("POST", "http://"+w.addr+"/hook", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", hookSecret)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("posting update %d to the replica at %s: %v", updateID, w.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 26 point 5: a budget shared by two bots. Two real odek-bot
// replicas (one token, webhooks on their own addresses) and a real `odek
// worker` share one redis-server. User 1001 has 1,000 tokens a day:
//   - a job through replica A spends 600;
//   - the next, through replica B, gets the 400 left as its cap (B sees
//     A's spend) and is stopped there with the budget notice;
//   - the third, through A again, is refused with when the cap resets
//     (A sees B's spend);
//   - user 1002's budget is untouched.
//
// The store holds 1,200 tokens for user 1001 (600 + the 600 the stopped
// job's one model call reported).
func TestE2EUserBudgetSharedByTwoBots(t *testing.T) {
	odek, odekBot := binaries(t)
	var mu sync.Mutex
	var caps []string
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last := r.LastMessage().Content
		mu.Lock()
		caps = append(caps, last)
		mu.Unlock()
		turn := llmtest.Reply("answer to " + last)
		turn.Usage = &llm.Usage{PromptTokens: 500, CompletionTokens: 100}
		return turn
	})
	srv := queuetest.StartServer(t, queuetest.ServerOptions{})
	tg := bottest.New(t)
	env := []string{
		"REDIS_URL=redis://" + srv.Addr + "/0", "ODEK_ARTIFACTS_DIR=" + t.TempDir(), "ODEK_QUEUE_LEASE=2",
		"ODEK_BASE_URL=" + model.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef", "ODEK_HOME=" + t.TempDir(),
	}
	var bots []*webhookBot
	for _, name := range []string{"bot-a", "bot-b"} {
		w := &webhookBot{addr: freeAddr(t)}
		start(t, name, odekBot, append([]string{
			"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
			"ODEK_TELEGRAM_ALLOWED_USERS=1001,1002", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1",
			"ODEK_TELEGRAM_USER_BUDGET=day_tokens=1000",
			"ODEK_TELEGRAM_WEBHOOK_URL=http://" + w.addr + "/hook", "ODEK_TELEGRAM_WEBHOOK_LISTEN=" + w.addr, "ODEK_TELEGRAM_WEBHOOK_SECRET=" + hookSecret,
		}, env...))
		bots = append(bots, w)
	}
	start(t, "w1", odek, env, "worker", "--name", "w1")
	a, b := bots[0], bots[1]

	a.post(t, 1, 1001, 1001, "first")
	tg.Wait(t, 60*time.Second, "the first answer", func(s *bottest.Server) bool { return visible(s, 1001, "answer to first") })
	b.post(t, 2, 1001, 1001, "second")
	tg.Wait(t, 60*time.Second, "the second job's end", func(s *bottest.Server) bool {
		return visible(s, 1001, "The job stopped: it used what was left of your budget") || visible(s, 1001, "answer to second")
	})
	if !visible(tg, 1001, "The job stopped: it used what was left of your budget") {
		t.Fatalf("replica B ran the second job without the 400 tokens A left as its cap: %q", tg.Visible(1001))
	}
	// Either replica may deliver B's result; both know it was the user's
	// budget (the job carries it), so neither hedges with the chat's.
	if visible(tg, 1001, "or of this chat's daily budget") {
		t.Fatalf("the budget stop was delivered without knowing whose budget capped the job: %q", tg.Visible(1001))
	}
	a.post(t, 3, 1001, 1001, "third")
	tg.Wait(t, 60*time.Second, "the refusal", func(s *bottest.Server) bool {
		return visible(s, 1001, "You have used your daily budget of 1,000 tokens. It resets at 00:00 UTC (in ") || visible(s, 1001, "answer to third")
	})
	if visible(tg, 1001, "answer to third") {
		t.Fatalf("replica A did not see the spend settled by B: %q", tg.Visible(1001))
	}
	b.post(t, 4, 1002, 1002, "other user")
	tg.Wait(t, 60*time.Second, "user 1002's answer", func(s *bottest.Server) bool { return visible(s, 1002, "answer to other user") })

	q, err := queue.NewRedis(context.Background(), srv.Client(), queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	u, err := q.BudgetUsage(context.Background(), queue.UserAccount(1001), now)
	if err != nil || u.Today(now).Tokens != 1200 || u.Today(now).Jobs != 2 || u.ReservedTokens != 0 {
		t.Fatalf("user 1001 in the store = %+v, %v: want 1,200 tokens in 2 jobs and nothing held", u, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range caps {
		if strings.Contains(c, "third") {
			t.Errorf("the refused request reached the model")
		}
	}
}

// Issue 27 gap 1: a scheduled fire checks the chat's daily budget (kept
// in Redis) before it runs. Real odek-bot, `odek worker` and Redis: the
// chat spends its 1,000 tokens; a goal scheduled every second with `odek
// schedule add` is then refused by the worker that fires it, without a
// model call; the schedule shows status budget with the reason, and the
// chat is told once however many fires are refused.
func TestE2EScheduledFireRefusedByBudget(t *testing.T) {
	odek, _ := binaries(t)
	var mu sync.Mutex
	var goals []string
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last := r.LastMessage().Content
		mu.Lock()
		goals = append(goals, last)
		mu.Unlock()
		turn := llmtest.Reply("answer to " + last)
		turn.Usage = &llm.Usage{PromptTokens: 900, CompletionTokens: 100}
		return turn
	})
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_DAILY_TOKEN_BUDGET=1000", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "spend the day")
	in.tg.Wait(t, 60*time.Second, "the answer", func(s *bottest.Server) bool { return visible(s, 1001, "answer to spend the day") })

	redisURL := ""
	for _, e := range in.env {
		if v, ok := strings.CutPrefix(e, "REDIS_URL="); ok {
			redisURL = v
		}
	}
	cmd := exec.Command(odek, "schedule", "add", "--redis", redisURL, "--chat", "1001", "--user", "1001", "--every", "1s", "--min-interval", "1s", "summarise the news")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("odek schedule add: %v %s", err, out)
	}
	id := strings.TrimSpace(string(out))
	in.tg.Wait(t, 60*time.Second, "the budget notice", func(s *bottest.Server) bool {
		return visible(s, 1001, "Scheduled job "+id+" did not run: this chat's daily budget of 1000 tokens is used up")
	})
	// Several more fires are refused; none speaks again.
	show := func() schedule.Schedule {
		c := exec.Command(odek, "schedule", "show", "--redis", redisURL, "--json", id)
		c.Env = cmd.Env
		b, err := c.Output()
		if err != nil {
			t.Fatalf("odek schedule show: %v", err)
		}
		var s schedule.Schedule
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("schedule show --json: %v: %s", err, b)
		}
		return s
	}
	var s schedule.Schedule
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// At least three fires (one a second) refused since it was made.
		if s = show(); s.LastStatus == schedule.StatusBudget && s.Last.After(s.CreatedAt.Add(2500*time.Millisecond)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule = %+v; chat %q", s, in.tg.Visible(1001))
		}
	}
	if !strings.Contains(s.LastError, "chat:1001 day_tokens spent (1000 tokens of 1000 tokens)") {
		t.Errorf("LastError = %q, want the reason", s.LastError)
	}
	if n := countVisible(in.tg, 1001, "did not run"); n != 1 {
		t.Errorf("the chat was told %d times, want once", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range goals {
		if strings.Contains(g, "summarise the news") {
			t.Fatalf("a refused fire reached the model")
		}
	}
}

func countVisible(s *bottest.Server, chat int64, sub string) int {
	n := 0
	for _, m := range s.Visible(chat) {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}
