package chatcore

import (
	"testing"
	"time"

	"github.com/odekrun/odek/events"
)

func TestGaugeText(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		g      Gauge
		window int
		lang   string
		want   string
	}{
		{"nothing known", Gauge{Session: "s"}, 32768, "en", ""},
		{"tokens and window", Gauge{Session: "s", Tokens: 12345}, 32768, "en", "Context: ~12,345 of 32,768 tokens (37 %) · not compacted yet"},
		{"no window", Gauge{Session: "s", Tokens: 500}, 0, "en", "Context: ~500 tokens · not compacted yet"},
		{"compacted", Gauge{Session: "s", Tokens: 9000, CompactedAt: now.Add(-2 * time.Hour), Before: 40000, After: 9000}, 100000, "en",
			"Context: ~9,000 of 100,000 tokens (9 %) · compacted 2 h 0 min ago (40,000 → 9,000 tokens)"},
		{"German", Gauge{Session: "s", Tokens: 100}, 1000, "de", "Kontext: ~100 von 1,000 Tokens (10 %) · noch nicht verdichtet"},
	} {
		if got := c.g.Text(c.lang, c.window, now); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestGaugeRecord(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := func(typ events.Type, data map[string]any) *events.Event {
		return &events.Event{Type: typ, Data: data, Timestamp: now.Add(-time.Minute)}
	}
	var ci ContextInfo
	for _, e := range []*events.Event{
		ev(events.RunStarted, map[string]any{"model": "gpt-4o"}),
		ev(events.IterationCompleted, map[string]any{"call_input_tokens": 1000.0}),
		ev(events.IterationCompleted, map[string]any{"call_input_tokens": 3000.0}),
		ev(events.ToolCallStarted, map[string]any{"call_input_tokens": 99.0}),
	} {
		ci = ci.Apply(e)
	}
	g := Gauge{}.Record("s1", ci, now)
	if g != (Gauge{Session: "s1", Model: "gpt-4o", Tokens: 3000, At: now}) {
		t.Errorf("after a job: %+v", g)
	}
	// A compaction in the next job: its after-figure is the context until
	// the next call says more.
	ci = ContextInfo{}.Apply(ev(events.ContextCompacted, map[string]any{"before_tokens": 30000.0, "after_tokens": 8000.0}))
	g = g.Record("s1", ci, now)
	if g.Tokens != 8000 || g.Before != 30000 || g.After != 8000 || !g.CompactedAt.Equal(now.Add(-time.Minute)) || g.Model != "gpt-4o" {
		t.Errorf("after a compaction: %+v", g)
	}
	// Another conversation (/new) starts a new gauge.
	g = g.Record("s2", ContextInfo{Tokens: 10}, now)
	if g != (Gauge{Session: "s2", Tokens: 10, At: now}) {
		t.Errorf("new Session: %+v", g)
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
		if got := CachedLine("en", c.prompt, c.cached); got != c.want {
			t.Errorf("CachedLine(%d, %d) = %q, want %q", c.prompt, c.cached, got, c.want)
		}
	}
}
