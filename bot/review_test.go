package bot

import (
	"context"
	"errors"
	"fmt"
	"github.com/odekrun/odek/bot/chatcore"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// A token with a stray control character (a CRLF .env file) makes the
// library's http.NewRequest fail with an error that quotes the whole URL,
// token included. Validate rejects such a token without echoing it.
func TestTokenWithControlCharacterIsRejectedWithoutEchoingIt(t *testing.T) {
	for _, tok := range []string{"123456:SECRET-token\r", "123456:SECRET token", "123456:SECRET/../x"} {
		err := Config{Token: tok, AllowAll: true}.Validate()
		if !errors.Is(err, ErrConfig) {
			t.Errorf("Validate(%q) = %v, want ErrConfig", tok, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	if err := (Config{Token: "123456:AAE_x-y9", AllowAll: true}).Validate(); err != nil {
		t.Errorf("a well-formed token was rejected: %v", err)
	}
}

// An API endpoint that does not parse as a URL makes every request fail
// in http.NewRequest with the URL, token included, in the error text:
// connect must fail at once with the token scrubbed.
func TestBadEndpointErrorDoesNotLeakToken(t *testing.T) {
	logs := &syncBuffer{}
	log := logrus.New()
	log.SetOutput(logs)
	cfg := Config{Token: "123456:SECRET-token", AllowAll: true, APIEndpoint: "http://[::1/bot%s/%s", Logger: log}.withDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := connect(ctx, cfg, nil)
	if err == nil {
		t.Fatal("connect succeeded against an endpoint that is not a URL")
	}
	if ctx.Err() != nil {
		t.Errorf("connect retried a permanent error until the deadline")
	}
	if strings.Contains(err.Error(), "SECRET") || strings.Contains(logs.String(), "SECRET") {
		t.Errorf("the token leaked: err=%v logs=%s", err, logs)
	}
}

// In embedded mode the queue dies with the process while the state file
// keeps the chat's unfinished jobs: after a restart the chat's head job
// is one the queue no longer knows, no result will ever come, and every
// new message waited behind it. /stop must clear such jobs.
func TestStopClearsJobsTheQueueNoLongerKnows(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	st := &memState{data: []byte(fmt.Sprintf(`{"version":1,"chats":{"%d":{"queue":["lost1"]}},"jobs":{"lost1":{"chat":%d,"user":%d,"started_at":"2026-01-01T00:00:00Z"}}}`, alice, alice, alice))}
	h := startBot(t, q, func(c *Config) { c.State = st })
	h.tg.UserMessage(alice, alice, "/stop")
	h.waitVisible(alice, "Stopping 1 job(s)")
	h.tg.UserMessage(alice, alice, "next")
	h.tg.Wait(t, wait, "a status message for the new job", func(s *bottest.Server) bool {
		return hasText(s.Visible(alice), "⏳") || hasText(s.Visible(alice), "Queued")
	})
	if hasText(h.tg.Visible(alice), "Queued — position") {
		t.Errorf("the new job still waits behind the lost one: %q", h.tg.Visible(alice))
	}
}

// recordingQueue records the outcome of every Enqueue.
type recordingQueue struct {
	*queue.Memory
	mu   sync.Mutex
	errs []error
}

func (r *recordingQueue) Enqueue(ctx context.Context, job queue.Job) (queue.Job, bool, error) {
	j, dup, err := r.Memory.Enqueue(ctx, job)
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	return j, dup, err
}

// A message whose update was already taken from getUpdates (so Telegram
// will not send it again) but which still waits in its chat's serial queue
// when the bot shuts down must still become a job, not vanish.
func TestMessageWaitingAtShutdownIsStillEnqueued(t *testing.T) {
	tg := bottest.New(t)
	q := &recordingQueue{Memory: queue.NewMemory(queue.Options{})}
	log := logrus.New()
	log.SetOutput(&syncBuffer{})
	b, err := New(Config{Token: bottest.Token, APIEndpoint: tg.URL(), AllowedUsers: []int64{alice},
		PollTimeout: time.Second, GlobalRate: 1000, Logger: log, Consumer: "test-bot"}, q)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) > 0 }, "setMyCommands")
	release, busy := make(chan struct{}), make(chan struct{})
	b.serial.Do(chatKey(alice), func(*chat) { close(busy); <-release }) // the chat is busy (a long reply, say)
	<-busy
	tg.UserMessage(alice, alice, "hello")
	tg.Wait(t, wait, "the message waiting in the chat's queue", func(*bottest.Server) bool {
		return b.serial.pending(chatKey(alice)) >= 1 // the message (and poll's settle barrier behind it)
	})
	cancel()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.errs) != 1 || q.errs[0] != nil {
		t.Errorf("enqueue outcomes %v: want one successful enqueue", q.errs)
	}
}

// A result whose reply could not be sent (here: the bot shut down while
// waiting out a 429) is left unacknowledged and delivered again later; the
// chat's usage must count it once, not once per attempt.
func TestRedeliveredResultCountsUsageOnce(t *testing.T) {
	q := queue.NewMemory(queue.Options{ResultLeaseTTL: 50 * time.Millisecond})
	st := &memState{}
	cfg := func(c *Config) { c.State = st }
	h := startBot(t, q, cfg)
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return queue.Result{Answer: "the answer", Usage: queue.Usage{PromptTokens: 850}}
	})
	h.tg.UserMessage(alice, alice, "go")
	h.tg.Wait(t, wait, "status message recorded", func(*bottest.Server) bool {
		found := false
		h.bot.inspect(alice, func(c *chat) {
			for _, js := range c.jobs {
				found = found || js.statusMsg != 0
			}
		})
		return found
	})
	h.tg.FailNext("sendMessage", 1, bottest.Failure{Code: 429, Description: "Too Many Requests: retry after 30", RetryAfter: 30})
	close(release)
	h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool {
		for _, x := range c {
			if x.Status == 429 {
				return true
			}
		}
		return false
	}, "sendMessage")
	h.stop() // while the reply waits out retry_after
	h.run(cfg)
	h.waitVisible(alice, "the answer")
	h.tg.UserMessage(alice, alice, "/usage")
	h.waitVisible(alice, "Today (UTC)")
	if !hasText(h.tg.Visible(alice), "Today (UTC): 850 tokens") {
		t.Errorf("usage after one job of 850 tokens: %q", h.tg.Visible(alice))
	}
}

// Chats and users seen once stayed in memory (and in the state snapshot)
// for ever; with ODEK_TELEGRAM_ALLOW_ALL anyone can grow them. Entries
// that hold nothing a later message would need are dropped.
func TestIdleChatsAndUsersArePruned(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	b, err := New(Config{Token: "x", AllowAll: true, Logger: logrus.New(), Now: func() time.Time { return now }}, queue.NewMemory(queue.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	b.users.take(5, t0) // one token short until 60/burst s later
	b.users.take(6, t0)
	put := func(id int64, st chatState) {
		c := b.newChat(chatKey(id))
		c.chatState = st
		b.serial.put(c, b.publish(c))
	}
	put(7, chatState{books: chatcore.Books{Use: chatcore.Usage{Day: "2026-03-01", Tokens: 10, Jobs: 1}}}) // usage of an earlier day
	put(8, chatState{session: "telegram:8:1"})                                                            // chose /new
	put(9, chatState{queue: []string{"j"}})                                                               // a job running
	put(10, chatState{arts: []chatArtifact{{id: "a1"}}, nextArt: 1})                                      // artifact ids

	now = t0.Add(5 * time.Second)
	b.prune(now)
	if b.users.len() != 2 {
		t.Errorf("users pruned before their bucket refilled: %d", b.users.len())
	}
	if !b.serial.kept(chatKey(7)) {
		t.Errorf("a chat with usage today was pruned")
	}
	now = t0.Add(24 * time.Hour)
	put(11, chatState{books: chatcore.Books{Use: chatcore.Usage{Day: "2026-03-02", Tokens: 10}}}) // today's usage
	put(12, chatState{})                                                                          // nothing
	b.prune(now)
	if b.users.len() != 0 {
		t.Errorf("users with full buckets kept: %d", b.users.len())
	}
	// Chat 7's usage of yesterday is its /usage history now (62 days are
	// kept): it stays until that history is older than KeepDays.
	for id, keep := range map[int64]bool{7: true, 8: true, 9: true, 10: true, 11: true, 12: false} {
		if ok := b.serial.kept(chatKey(id)); ok != keep {
			t.Errorf("chat %d kept=%v, want %v", id, ok, keep)
		}
	}
	now = t0.AddDate(0, 0, chatcore.KeepDays+2)
	b.prune(now)
	if b.serial.kept(chatKey(7)) {
		t.Errorf("chat 7 kept with history older than %d days", chatcore.KeepDays)
	}
}

// A webhook left by an earlier webhook-mode run is removed when the bot
// polls; Telegram would answer every getUpdates with 409 otherwise.
func TestPollingRemovesALeftoverWebhook(t *testing.T) {
	tg := bottest.New(t)
	resp, err := http.PostForm(tg.URL()+"/bot"+bottest.Token+"/setWebhook", url.Values{"url": {"https://bot.example.test/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := &harness{t: t, tg: tg, q: queue.NewMemory(queue.Options{}), logs: &syncBuffer{}}
	h.run(nil)
	h.tg.UserMessage(alice, alice, "/start")
	h.waitVisible(alice, fmt.Sprint(alice))
}

// In embedded mode the queue dies with the process: a restored unfinished
// job is dropped, its status message removed, its chat told, and the
// chat's next message runs instead of queueing behind a ghost.
func TestVolatileQueueDropsLostJobsOnRestart(t *testing.T) {
	st := &memState{}
	h := startBot(t, queue.NewMemory(queue.Options{}), func(c *Config) { c.State = st; c.VolatileQueue = true })
	h.tg.UserMessage(alice, alice, "never claimed") // no worker: stays unfinished
	h.tg.Wait(t, wait, "job with status message", func(*bottest.Server) bool {
		ok := false
		h.bot.inspect(alice, func(c *chat) {
			ok = len(c.queue) == 1 && c.jobs[c.queue[0]] != nil && c.jobs[c.queue[0]].statusMsg != 0
		})
		return ok
	})
	h.stop()
	// The new process has a new, empty in-memory queue.
	q2 := queue.NewMemory(queue.Options{})
	h.q = q2
	h.run(func(c *Config) { c.State = st; c.VolatileQueue = true })
	h.waitVisible(alice, "Please send it again")
	worker(t, q2, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "fresh answer"}
	})
	h.tg.UserMessage(alice, alice, "again")
	h.waitVisible(alice, "fresh answer")
	for _, m := range h.tg.Visible(alice) {
		if strings.Contains(m, "Queued") {
			t.Fatalf("a ghost job still holds the chat's queue: %q", h.tg.Visible(alice))
		}
	}
}
