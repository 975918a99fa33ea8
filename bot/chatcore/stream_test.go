package chatcore

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

func TestParseStream(t *testing.T) {
	for in, want := range map[string]Stream{"": StreamPartial, "auto": StreamPartial, "edit": StreamPartial, " Progress ": StreamProgress,
		"partial": StreamPartial, "OFF": StreamOff} {
		if got, err := ParseStream(in); err != nil || got != want {
			t.Errorf("ParseStream(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseStream("loud"); err == nil || !strings.Contains(err.Error(), "progress, partial or off") || !strings.Contains(err.Error(), "loud") {
		t.Errorf("ParseStream(loud) error %v, want one naming the modes and the word", err)
	}
}

// A draft never shrinks or jumps back: whatever the deltas do (a new
// model call after a tool call, a missed entry, a repeat, a late piece of
// an older call, text past the draft's size), every draft sent begins
// with the one before it and is longer.
func TestDraftNeverShrinksOrJumpsBack(t *testing.T) {
	words := []string{"The ", "answer ", "is ", "forty-two", ". ", "Größe ", "→ ", "\n", "日本語 ", "**bold** "}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		var s Status
		shown, sent := "", 0
		call, off := 1, 0
		for step := 0; step < 400; step++ {
			d := queue.AnswerDelta{Call: call, Offset: off, Text: words[r.IntN(len(words))]}
			switch r.IntN(20) {
			case 0: // the next model call (after a tool call)
				call++
				off = 0
				d.Call, d.Offset = call, 0
			case 1: // an entry was missed
				d.Offset = off + 5
			case 2: // a repeat
				d.Offset = max(off-len(d.Text), 0)
			case 3: // a late piece of an older call
				d.Call = call - 1
			}
			before := s.DraftLen
			s = s.AddDelta(d)
			if d.Call == call {
				if d.Offset >= off || s.DraftLen != before {
					off = s.DraftLen
				}
			}
			next, ok := GrowDraft(shown, s.Streamed, s.StreamedCut, 300)
			if !ok {
				continue
			}
			if !strings.HasPrefix(next, shown) || len([]rune(next)) <= len([]rune(shown)) || len([]rune(next)) > 300 {
				t.Fatalf("seed %d step %d: draft went from %q to %q", seed, step, shown, next)
			}
			shown = next
			sent++
		}
		if sent == 0 {
			t.Fatalf("seed %d: no draft was ever sent", seed)
		}
	}
}

func TestGrowDraft(t *testing.T) {
	cases := []struct {
		shown, full string
		cut         bool
		want        string
		ok          bool
	}{
		{"", "Hello", false, "Hello", true},
		{"Hello", "Hello", false, "Hello", false},
		{"Hello", "Hello world", false, "Hello world", true},
		{"Hello world", "Hello", false, "Hello world", false},         // would shrink
		{"Hello world", "Goodbye world", false, "Hello world", false}, // would jump back
		{"", "   ", false, "", false},
		{"", "abcdefghijklmnopqrstuvwxyz", false, "abcdefghijklmnopqrs…", true}, // past max: frozen with "…"
		{"abcdefghijklmnopqrs…", "abcdefghijklmnopqrstuvwxyz!", false, "abcdefghijklmnopqrs…", false},
		{"ab", "abc", true, "abc…", true},
	}
	for _, c := range cases {
		got, ok := GrowDraft(c.shown, c.full, c.cut, 20)
		if got != c.want || ok != c.ok {
			t.Errorf("GrowDraft(%q, %q, %v) = %q, %v; want %q, %v", c.shown, c.full, c.cut, got, ok, c.want, c.ok)
		}
	}
}

func TestStreamedSetsCallsApartAndStopsAtItsBound(t *testing.T) {
	var s Status
	s = s.AddDelta(queue.AnswerDelta{Call: 1, Text: "Let me look."})
	s = s.AddDelta(queue.AnswerDelta{Call: 2, Text: "It is 42."})
	if s.Streamed != "Let me look.\n\nIt is 42." || s.Draft != "It is 42." {
		t.Fatalf("Streamed %q Draft %q", s.Streamed, s.Draft)
	}
	big := strings.Repeat("é", maxStreamedKept) // 2 bytes each
	s = s.AddDelta(queue.AnswerDelta{Call: 2, Offset: s.DraftLen, Text: big})
	if !s.StreamedCut || len(s.Streamed) > maxStreamedKept || !strings.HasSuffix(s.Streamed, "é") {
		t.Fatalf("cut %v, %d bytes, tail %q", s.StreamedCut, len(s.Streamed), s.Streamed[len(s.Streamed)-4:])
	}
}

func TestProgressLinesListFinishedTools(t *testing.T) {
	ev := func(typ, tool string, args map[string]any) []byte {
		data := map[string]any{}
		if args != nil {
			data["args_summary"] = args
		}
		b, _ := json.Marshal(map[string]any{"schema": "odek.event/v1", "type": typ, "tool": tool, "iteration": 1, "data": data})
		return b
	}
	var s Status
	s = s.Apply(ev("tool_call_started", "shell", map[string]any{"argv0": "go"}))
	if s.ProgressLines() != "" {
		t.Fatalf("a running tool is listed: %q", s.ProgressLines())
	}
	s = s.Apply(ev("tool_call_completed", "shell", nil))
	s = s.Apply(ev("tool_call_started", "read_file", map[string]any{"path": "main.go"}))
	s = s.Apply(ev("tool_call_failed", "read_file", nil))
	s = s.Apply(ev("tool_call_started", "shell", map[string]any{"argv0": "ls"}))
	if got := s.ProgressLines(); got != "✓ shell: go\n✗ read_file: main.go" {
		t.Fatalf("lines %q", got)
	}
	for i := 0; i < 12; i++ {
		s = s.Apply(ev("tool_call_completed", "shell", nil))
		s = s.Apply(ev("tool_call_started", "shell", map[string]any{"argv0": "x"}))
	}
	if n := strings.Count(s.ProgressLines(), "\n") + 1; n != maxToolLines {
		t.Fatalf("%d lines, want %d", n, maxToolLines)
	}
}

func TestProviderTroubleAndFolding(t *testing.T) {
	for e, want := range map[string]string{
		"agent: model call: llm: retries exhausted after 3 attempt(s): llm: HTTP 503: overloaded": "prov.down",
		"llm: request failed: dial tcp 10.0.0.1:443: connect: connection refused":                 "prov.down",
		"llm: unauthorized: HTTP 401":                         "prov.key",
		"llm: HTTP 429 (insufficient_quota): quota exhausted": "prov.quota",
		"llm: context length exceeded":                        "",
		"tool shell failed":                                   "",
		"":                                                    "",
	} {
		if got := ProviderTrouble(e); got != want {
			t.Errorf("ProviderTrouble(%q) = %q, want %q", e, got, want)
		}
	}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	if FoldNotice(time.Time{}, t0, time.Minute) || !FoldNotice(t0, t0.Add(59*time.Second), time.Minute) || FoldNotice(t0, t0.Add(time.Minute), time.Minute) {
		t.Error("FoldNotice folds outside the cooldown or not inside it")
	}
	if got := NoticeText("de", "prov.down", 3, t0); !strings.Contains(got, "3 Anfragen") || !strings.Contains(got, "10:00 UTC") {
		t.Errorf("NoticeText = %q", got)
	}
}
