package bot

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// Issue 21: a job carries what is left of the chat's daily budget as its
// total-token cap (the worker stops it there), and the cap is reserved
// while the job is unfinished, so a second job of the chat cannot take the
// same remainder again. A message sent meanwhile is held in the chat,
// shown as queued, and becomes a job when the first ends, with what the
// first left as its cap (it used to be refused: "reserved by unfinished
// jobs").
func TestJobsReserveTheRestOfTheDailyBudget(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.DailyTokenBudget = 1000; c.UserJobsPerMinute = -1 })
	release := make(chan struct{})
	var mu sync.Mutex
	var caps []int
	worker(t, q, func(_ context.Context, l queue.Lease) queue.Result {
		mu.Lock()
		caps = append(caps, l.Job.Budget.MaxTotalTokens)
		mu.Unlock()
		if strings.Contains(l.Job.Goal, "first") {
			<-release
			return queue.Result{Answer: "first done", Usage: queue.Usage{PromptTokens: 250, CompletionTokens: 50}}
		}
		return queue.Result{Answer: "answer: " + l.Job.Goal}
	})
	h.tg.UserMessage(alice, alice, "first")
	h.tg.Wait(t, wait, "the first job running", func(*bottest.Server) bool { mu.Lock(); defer mu.Unlock(); return len(caps) == 1 })
	h.tg.UserMessage(alice, alice, "second")
	h.tg.Wait(t, wait, "the second message held", func(*bottest.Server) bool {
		n := 0
		h.bot.inspect(alice, func(c *chat) { n = len(c.held) })
		return n == 1
	})
	h.waitVisible(alice, "Queued — position 1")
	close(release)
	h.waitVisible(alice, "first done")
	h.waitVisible(alice, "answer: second")
	if hasText(h.tg.Visible(alice), "reserved") {
		t.Errorf("the held message was refused: %q", h.tg.Visible(alice))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(caps) != 2 || caps[0] != 1000 || caps[1] != 700 {
		t.Errorf("job caps %v, want [1000 700]: the whole day, then what the first left", caps)
	}
}

// A held message is part of the chat's state: it survives a restart of
// the bot and starts once the job it waited for ends; /stop forgets it.
func TestHeldMessageSurvivesRestartAndStop(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	st := &memState{}
	cfg := func(c *Config) { c.State = st; c.DailyTokenBudget = 1000; c.UserJobsPerMinute = -1 }
	h := startBot(t, q, cfg)
	release, block := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var goals []string
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		mu.Lock()
		goals = append(goals, l.Job.Goal)
		mu.Unlock()
		wait := map[string]chan struct{}{"first": release, "third": block}[l.Job.Goal]
		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
			}
		}
		return queue.Result{Answer: "answer: " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 100}}
	})
	h.tg.UserMessage(alice, alice, "first")
	h.tg.Wait(t, wait, "the first job running", func(*bottest.Server) bool { mu.Lock(); defer mu.Unlock(); return len(goals) == 1 })
	h.tg.UserMessage(alice, alice, "second")
	h.waitVisible(alice, "Queued — position 1")
	h.stop()
	h.run(cfg)
	h.tg.Wait(t, wait, "the held message restored", func(*bottest.Server) bool {
		n := 0
		h.bot.inspect(alice, func(c *chat) { n = len(c.held) })
		return n == 1
	})
	close(release)
	h.waitVisible(alice, "answer: second")
	mu.Lock()
	if len(goals) != 2 || goals[1] != "second" {
		t.Errorf("jobs %q, want [first second]", goals)
	}
	mu.Unlock()

	// /stop forgets a held message: it never becomes a job.
	h.tg.UserMessage(alice, alice, "third")
	h.tg.UserMessage(alice, alice, "fourth")
	h.tg.Wait(t, wait, "fourth held", func(*bottest.Server) bool {
		n := 0
		h.bot.inspect(alice, func(c *chat) { n = len(c.held) })
		return n == 1
	})
	h.tg.UserMessage(alice, alice, "/stop")
	h.tg.Wait(t, wait, "held forgotten", func(*bottest.Server) bool {
		n := 1
		h.bot.inspect(alice, func(c *chat) { n = len(c.held) })
		return n == 0
	})
	close(block)
	h.tg.Wait(t, wait, "the third job's end", func(*bottest.Server) bool {
		n := 1
		h.bot.inspect(alice, func(c *chat) { n = len(c.queue) })
		return n == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, g := range goals {
		if g == "fourth" {
			t.Errorf("the held message ran after /stop: %q", goals)
		}
	}
}

// With the operator's per-job cap below the day's remainder, a job
// reserves only its own cap: the chat's next message starts with the rest
// instead of being refused.
func TestJobReservesOnlyItsOwnCap(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.DailyTokenBudget = 1000
		c.UserJobsPerMinute = -1
		c.JobBudget.MaxTotalTokens = 300
	})
	release := make(chan struct{})
	var mu sync.Mutex
	var caps []int
	worker(t, q, func(_ context.Context, l queue.Lease) queue.Result {
		mu.Lock()
		caps = append(caps, l.Job.Budget.MaxTotalTokens)
		mu.Unlock()
		if strings.Contains(l.Job.Goal, "first") {
			<-release
			return queue.Result{Answer: "first done"}
		}
		return queue.Result{Answer: "answer: " + l.Job.Goal}
	})
	h.tg.UserMessage(alice, alice, "first")
	h.tg.Wait(t, wait, "the first job running", func(*bottest.Server) bool { mu.Lock(); defer mu.Unlock(); return len(caps) == 1 })
	h.tg.UserMessage(alice, alice, "second")
	close(release)
	h.waitVisible(alice, "first done")
	h.waitVisible(alice, "answer: second")
	mu.Lock()
	defer mu.Unlock()
	if len(caps) != 2 || caps[0] != 300 || caps[1] != 300 {
		t.Errorf("job caps %v, want [300 300]", caps)
	}
}
