package bot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/queue"
)

func TestGaugeText(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		g      gauge
		window int
		lang   string
		want   string
	}{
		{"nothing known", gauge{session: "s"}, 32768, "en", ""},
		{"tokens and window", gauge{session: "s", tokens: 12345}, 32768, "en", "Context: ~12,345 of 32,768 tokens (37 %) · not compacted yet"},
		{"no window", gauge{session: "s", tokens: 500}, 0, "en", "Context: ~500 tokens · not compacted yet"},
		{"compacted", gauge{session: "s", tokens: 9000, compactedAt: now.Add(-2 * time.Hour), before: 40000, after: 9000}, 100000, "en",
			"Context: ~9,000 of 100,000 tokens (9 %) · compacted 2 h 0 min ago (40,000 → 9,000 tokens)"},
		{"German", gauge{session: "s", tokens: 100}, 1000, "de", "Kontext: ~100 von 1,000 Tokens (10 %) · noch nicht verdichtet"},
	} {
		if got := c.g.text(c.lang, c.window, now); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestGaugeRecord(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := func(typ events.Type, data map[string]any) *events.Event {
		return &events.Event{Type: typ, Data: data, Timestamp: now.Add(-time.Minute)}
	}
	var ci contextInfo
	for _, e := range []*events.Event{
		ev(events.RunStarted, map[string]any{"model": "gpt-4o"}),
		ev(events.IterationCompleted, map[string]any{"call_input_tokens": 1000.0}),
		ev(events.IterationCompleted, map[string]any{"call_input_tokens": 3000.0}),
		ev(events.ToolCallStarted, map[string]any{"call_input_tokens": 99.0}),
	} {
		ci = ci.applyContext(e)
	}
	g := gauge{}.record("s1", ci, now)
	if g != (gauge{session: "s1", model: "gpt-4o", tokens: 3000, at: now}) {
		t.Errorf("after a job: %+v", g)
	}
	// A compaction in the next job: its after-figure is the context until
	// the next call says more.
	ci = contextInfo{}.applyContext(ev(events.ContextCompacted, map[string]any{"before_tokens": 30000.0, "after_tokens": 8000.0}))
	g = g.record("s1", ci, now)
	if g.tokens != 8000 || g.before != 30000 || g.after != 8000 || !g.compactedAt.Equal(now.Add(-time.Minute)) || g.model != "gpt-4o" {
		t.Errorf("after a compaction: %+v", g)
	}
	// Another conversation (/new) starts a new gauge.
	g = g.record("s2", contextInfo{tokens: 10}, now)
	if g != (gauge{session: "s2", tokens: 10, at: now}) {
		t.Errorf("new session: %+v", g)
	}
}

func TestCachedLine(t *testing.T) {
	for _, c := range []struct {
		prompt, cached int64
		want           string
	}{
		{0, 0, ""},
		{1000, 0, ""},
		{1000, 400, ", 400 input tokens from the prompt cache (40 %)"},
		{1000, 5000, ", 5,000 input tokens from the prompt cache (100 %)"}, // a provider's odd figures never pass 100 %
	} {
		if got := cachedLine("en", c.prompt, c.cached); got != c.want {
			t.Errorf("cachedLine(%d, %d) = %q, want %q", c.prompt, c.cached, got, c.want)
		}
	}
}

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
