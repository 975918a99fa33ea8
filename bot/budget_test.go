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
// same remainder again; the reservation goes back, less what the job
// spent, when its result is delivered.
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
	h.waitVisible(alice, "is reserved by its 1 unfinished job(s)")
	close(release)
	h.waitVisible(alice, "first done")
	h.tg.UserMessage(alice, alice, "third")
	h.waitVisible(alice, "answer: third")
	mu.Lock()
	defer mu.Unlock()
	if len(caps) != 2 || caps[0] != 1000 || caps[1] != 700 {
		t.Errorf("job caps %v, want [1000 700]: the whole day, then what the first left", caps)
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
