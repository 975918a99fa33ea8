package bot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// fakeCompactor records requests and answers with res, err.
type fakeCompactor struct {
	mu   sync.Mutex
	reqs []CompactRequest
	res  Compacted
	err  error
}

func (f *fakeCompactor) Compact(_ context.Context, r CompactRequest) (Compacted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	return f.res, f.err
}

// Issue 29: /status shows how full the conversation is (the latest model
// call's input tokens against the model's window, and the latest
// compaction); /usage shows the prompt cache's share; /compact folds the
// conversation now through Config.Compactor, never while a job of the
// chat is unfinished, and says so when the bot has none.
func TestStatusGaugeUsageCacheAndCompact(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	fc := &fakeCompactor{res: Compacted{Folded: 3, BeforeTokens: 20000, AfterTokens: 6000, SideInputTokens: 900, SideOutput: 100}}
	h := startBot(t, q, func(c *Config) {
		c.Compactor = fc
		c.ContextWindow = func(model string) int {
			if model == "gpt-4o" {
				return 128000
			}
			return 0
		}
	})
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		event(t, q, l.Job.ID, `{"schema":"odek.event/v1","type":"run_started","seq":1,"run_id":"r","timestamp":"2026-03-01T12:00:00Z","data":{"model":"gpt-4o"}}`)
		event(t, q, l.Job.ID, `{"schema":"odek.event/v1","type":"iteration_completed","seq":2,"run_id":"r","iteration":1,"timestamp":"2026-03-01T12:00:01Z","data":{"input_tokens":12800,"output_tokens":10,"call_input_tokens":12800}}`)
		if l.Job.Goal == "slow" {
			<-release
		}
		return queue.Result{Answer: "done " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 12800, CompletionTokens: 10, CachedTokens: 3200}}
	})
	h.tg.UserMessage(alice, alice, "hello")
	h.waitVisible(alice, "done hello")
	h.tg.UserMessage(alice, alice, "/status")
	h.waitVisible(alice, "Context: ~12,800 of 128,000 tokens (10 %) · not compacted yet")
	h.tg.UserMessage(alice, alice, "/usage")
	h.waitVisible(alice, "3,200 input tokens from the prompt cache (25 %)")

	// Not while a job runs: the worker saves the session when it ends.
	h.tg.UserMessage(alice, alice, "slow")
	h.waitVisible(alice, "Working")
	h.tg.UserMessage(alice, alice, "/compact")
	h.waitVisible(alice, "A job of this chat is unfinished")
	close(release)
	h.waitVisible(alice, "done slow")

	h.tg.UserMessage(alice, alice, "/compact")
	h.waitVisible(alice, "🗜 Compacted: 3 older message group(s) folded into the digest, about 20,000 → 6,000 tokens (the digest took 1,000 tokens)")
	fc.mu.Lock()
	if len(fc.reqs) != 1 || fc.reqs[0] != (CompactRequest{ChatID: alice, Session: sessionID(alice, "")}) {
		t.Errorf("compact requests %+v", fc.reqs)
	}
	fc.mu.Unlock()
	h.tg.UserMessage(alice, alice, "/status")
	h.tg.Wait(t, wait, "the gauge after /compact", func(s *bottest.Server) bool {
		for _, m := range s.Visible(alice) {
			if strings.Contains(m, "Context: ~6,000 of 128,000 tokens (4 %) · compacted ") && strings.Contains(m, " ago (20,000 → 6,000 tokens)") {
				return true
			}
		}
		return false
	})
	// The digest call counts against the chat's day: 2 × 12,810 + 1,000.
	h.tg.UserMessage(alice, alice, "/usage")
	h.waitVisible(alice, "Today (UTC): 26,620 tokens")

	fc.mu.Lock()
	fc.res, fc.err = Compacted{SideInputTokens: 5}, errors.New("agent: digest side call: HTTP 500")
	fc.mu.Unlock()
	h.tg.UserMessage(alice, alice, "/compact")
	h.waitVisible(alice, "could not be compacted (agent: digest side call: HTTP 500); it is unchanged")
	fc.mu.Lock()
	fc.res, fc.err = Compacted{}, nil
	fc.mu.Unlock()
	h.tg.UserMessage(alice, alice, "/compact")
	h.waitVisible(alice, "Nothing to compact yet")
}

func TestCompactWithoutACompactor(t *testing.T) {
	h := startBot(t, nil, nil)
	h.tg.UserMessage(alice, alice, "/compact")
	h.waitVisible(alice, "/compact is not available on this bot")
	if hasText(h.tg.Visible(alice), "Unknown command") {
		t.Errorf("/compact unknown: %q", h.tg.Visible(alice))
	}
	for _, m := range h.tg.Visible(alice) {
		if strings.Contains(m, "Compacted") {
			t.Errorf("compacted without a compactor: %q", m)
		}
	}
}
