package chatcore

import (
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/tgformat"
	"github.com/odekrun/odek/queue"
)

func TestBudgetAndClock(t *testing.T) {
	for _, c := range []struct {
		budget, used, reserved, cap int64
		verdict                     Verdict
	}{
		{0, 1e9, 1e9, 0, BudgetOK},       // no budget: no cap
		{1000, 0, 0, 1000, BudgetOK},     // the whole day
		{1000, 999, 0, 1, BudgetOK},      // what is left
		{1000, 1000, 0, 0, BudgetSpent},  // spent
		{1000, 1200, 0, 0, BudgetSpent},  // overrun by a last model call
		{1000, 300, 700, 0, BudgetHeld},  // the rest is held by a running job
		{1000, 300, 600, 100, BudgetOK},  // the part no job holds
		{1000, 300, 9000, 0, BudgetHeld}, // restored reservations past the day
	} {
		cap, v := JobAllowance(c.budget, c.used, c.reserved)
		if cap != c.cap || v != c.verdict {
			t.Errorf("JobAllowance(%d, %d, %d) = %d, %v; want %d, %v", c.budget, c.used, c.reserved, cap, v, c.cap, c.verdict)
		}
	}
	if ShouldWarn(Usage{Tokens: 799}, 1000) || !ShouldWarn(Usage{Tokens: 800}, 1000) || ShouldWarn(Usage{Tokens: 900, Warned: true}, 1000) || ShouldWarn(Usage{Tokens: 5}, 0) {
		t.Error("shouldWarn")
	}
	late := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	u := Usage{Day: UTCDay(late), Tokens: 500, Warned: true}
	if got := u.Rollover(late.Add(2 * time.Minute)); got.Tokens != 0 || got.Warned || got.Day != "2026-03-02" {
		t.Errorf("rollover at midnight UTC: %+v", got)
	}
	if got := u.Rollover(late); got.Tokens != 500 {
		t.Errorf("same day reset: %+v", got)
	}
	if d := UntilMidnightUTC(late); d != time.Minute {
		t.Errorf("untilMidnightUTC = %v", d)
	}
	// Midnight is UTC, not local: 23:30 in UTC-5 is 04:30 UTC next day.
	ny := time.FixedZone("EST", -5*3600)
	if d := UntilMidnightUTC(time.Date(2026, 3, 1, 23, 30, 0, 0, ny)); d != 19*time.Hour+30*time.Minute {
		t.Errorf("UntilMidnightUTC(EST) = %v", d)
	}
	for d, want := range map[time.Duration]string{0: "1 s", 12 * time.Second: "12 s", 3 * time.Minute: "3 min", 5*time.Hour + 3*time.Minute: "5 h 3 min"} {
		if got := HumanWait(d); got != want {
			t.Errorf("HumanWait(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestStatusText(t *testing.T) {
	var s Status
	if got := s.Text(2, 0); got != "📥 Queued — position 2. /stop cancels." {
		t.Errorf("queued: %q", got)
	}
	if got := s.Text(0, 0); got != "⏳ Starting…" {
		t.Errorf("starting: %q", got)
	}
	s = s.Apply([]byte(`{"schema":"odek.progress/v1","job_id":"j","state":"running","attempt":2,"iteration":3,"last_tool":"shell","input_tokens":1000,"output_tokens":234,"elapsed_ms":12000}`))
	s = s.Apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_started","seq":9,"run_id":"r","iteration":3,"tool":"shell","timestamp":"2026-01-01T00:00:00Z","data":{"args_summary":{"argv0":"go\ntest","class":"safe"},"args":"go test -token=SECRET"}}`))
	s = s.Apply([]byte(`{"schema":"odek.event/v1","type":"plan_updated","seq":10,"run_id":"r","timestamp":"2026-01-01T00:00:00Z","data":{"blocked":0,"done":2,"in_progress":1,"pending":2,"steps":5,"version":3}}`))
	s = s.Apply([]byte(`not json`))
	s = s.Apply([]byte(`{"schema":"other/v9","state":"finished"}`))
	want := "⏳ Working · step 3 · 🔧 shell: go test · plan 2/5 · 1,234 tokens · 12 s · attempt 2"
	if got := s.Text(0, 5*time.Second); got != want {
		t.Errorf("text =\n %q\nwant\n %q", got, want)
	}
	if s.Finished {
		t.Error("an unknown schema finished the job")
	}
}

// FuzzStatusApply: progress entries come from workers; any bytes must
// leave a status whose text is one line set within bounds.
func FuzzStatusApply(f *testing.F) {
	f.Add([]byte(`{"schema":"odek.event/v1","type":"tool_call_started","tool":"shell","data":{"args_summary":{"argv0":"ls"}}}`))
	f.Add([]byte(`{"schema":"odek.progress/v1","iteration":-5,"last_tool":"x\ny","elapsed_ms":-1}`))
	f.Add([]byte(`{"schema":"odek.event/v1","type":"plan_updated","data":{"done":"x","steps":1e300}}`))
	f.Add([]byte(`{"schema":"odek.event/v1","type":"plan_updated","data":{"done":-3,"steps":4}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Status{}.Apply(data)
		text := s.Text(0, time.Second)
		if strings.ContainsAny(text, "\n\r") || tgformat.TextLen(text) > 400 {
			t.Fatalf("status text %q", text)
		}
	})
}

// Every built-in text exists in every language, once, with the same fmt
// verbs in the same order, so no German user meets an English line and no
// translation drops an argument.
func TestEveryTextInEveryLanguage(t *testing.T) {
	verbs := func(f string) string {
		var v []string
		for i := 0; i < len(f); i++ {
			if f[i] == '%' && i+1 < len(f) {
				v = append(v, string(f[i+1]))
				i++
			}
		}
		return strings.Join(v, "")
	}
	all := map[string]map[string]string{}
	for _, set := range []map[string]map[string]string{texts, moreTexts, busyTexts, streamTexts, voiceApproveTexts} {
		for lang, m := range set {
			if all[lang] == nil {
				all[lang] = map[string]string{}
			}
			for k, f := range m {
				if _, dup := all[lang][k]; dup {
					t.Errorf("%s: key %q defined twice", lang, k)
				}
				all[lang][k] = f
			}
		}
	}
	for lang, m := range all {
		for k, f := range all["en"] {
			g, ok := m[k]
			if !ok {
				t.Errorf("%s: no text for %q", lang, k)
				continue
			}
			if verbs(f) != verbs(g) {
				t.Errorf("%s: %q has verbs %q, English %q", lang, k, verbs(g), verbs(f))
			}
		}
		for k := range m {
			if _, ok := all["en"][k]; !ok {
				t.Errorf("%s: %q has no English text", lang, k)
			}
		}
	}
	if len(months["de"]) != 12 || months["de"][2] != "März" {
		t.Error("German month names")
	}
}

// Deltas fold into the draft: a later call starts over, a gap shows "…",
// late and repeated pieces are ignored. Pure.
func TestAddDelta(t *testing.T) {
	var s Status
	for _, d := range []queue.AnswerDelta{{Call: 1, Offset: 0, Text: "Let me check."}, {Call: 2, Offset: 0, Text: "Found"}, {Call: 2, Offset: 5, Text: " it"}, {Call: 1, Offset: 13, Text: "late"}, {Call: 2, Offset: 0, Text: "Found"}} {
		s = s.AddDelta(d)
	}
	if s.Draft != "Found it" || s.DraftCall != 2 || s.DraftLen != 8 {
		t.Errorf("draft %+v", s)
	}
	s = s.AddDelta(queue.AnswerDelta{Call: 2, Offset: 20, Text: "end"})
	if s.Draft != "…end" || s.DraftLen != 23 {
		t.Errorf("after a gap: %q %d", s.Draft, s.DraftLen)
	}
	s = s.AddDelta(queue.AnswerDelta{Call: 3, Text: strings.Repeat("é", maxDraftKept)})
	if len(s.Draft) > maxDraftKept+len("…") || !strings.HasPrefix(s.Draft, "…é") {
		t.Errorf("long draft kept %d bytes, starts %q", len(s.Draft), s.Draft[:8])
	}
}

func TestAppendHistoryKeepsTwoMonths(t *testing.T) {
	now := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)
	h := AppendHistory(nil, DayTotal{Day: "2026-09-01", Tokens: 1}, now)
	h = AppendHistory(h, DayTotal{Day: "2026-12-30", Tokens: 2}, now)
	h = AppendHistory(h, DayTotal{Day: "2026-12-30", Tokens: 3}, now)
	if len(h) != 1 || h[0].Tokens != 5 {
		t.Errorf("history = %+v", h)
	}
}

// The status line in German, pure.
func TestStatusTextInGerman(t *testing.T) {
	s := Status{Started: true, iteration: 3, tool: "shell", detail: "go", planDone: 2, planTotal: 5, tokens: 1234, attempt: 2}
	want := "⏳ Arbeitet · Schritt 3 · 🔧 shell: go · Plan 2/5 · 1,234 Tokens · 12 s · Versuch 2"
	if got := s.TextIn("de", 0, 12*time.Second); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (Status{}).TextIn("de", 2, 0); got != "📥 In der Warteschlange — Position 2. /stop bricht ab." {
		t.Errorf("queued: %q", got)
	}
}

// MCP progress (tool_call_progress events on the progress stream, as the
// worker streams every event) shows in the status line: the share done of
// a known total and the server's message, cleaned and clipped; the next
// tool call clears it.
func TestMCPProgressInTheStatus(t *testing.T) {
	var s Status
	s = s.Apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_started","seq":1,"run_id":"r","iteration":1,"tool":"docs__search","timestamp":"2026-01-01T00:00:00Z"}`))
	s = s.Apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_progress","seq":2,"run_id":"r","iteration":1,"timestamp":"2026-01-01T00:00:00Z","data":{"tool":"docs__search","server":"docs","mcp_tool":"search","progress":3,"total":10,"message":"indexing\nfiles"}}`))
	if got, want := s.Text(0, 2*time.Second), "⏳ Working · step 1 · 🔧 docs__search · 30 % · indexing files · 2.0 s"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s = s.Apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_progress","seq":3,"run_id":"r","iteration":1,"timestamp":"2026-01-01T00:00:00Z","data":{"tool":"docs__search","progress":7}}`))
	if !strings.Contains(s.Text(0, 0), "🔧 docs__search · 7 ·") {
		t.Errorf("progress without total: %q", s.Text(0, 0))
	}
	s = s.Apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_completed","seq":4,"run_id":"r","iteration":1,"tool":"docs__search","timestamp":"2026-01-01T00:00:00Z"}`))
	if strings.Contains(s.Text(0, 0), "7") {
		t.Errorf("progress kept after the call ended: %q", s.Text(0, 0))
	}
	if got := mcpProgress(map[string]any{"progress": 5.0, "total": 4.0, "message": strings.Repeat("x", 300)}); !strings.HasPrefix(got, "100 % · ") || len([]rune(got)) > 8+maxMCPMessage {
		t.Errorf("overshoot/long message: %q", got)
	}

}

func TestResultText(t *testing.T) {
	tests := []struct {
		res      queue.Result
		timedOut bool
		want     string
	}{
		{queue.Result{Status: queue.StatusCanceled}, false, "⏹ Stopped."},
		{queue.Result{Status: queue.StatusCanceled}, true, "⏱ Stopped: the job ran longer than the limit of 15 min."},
		{queue.Result{Status: queue.StatusFailed, Error: "llm_error\nretries exhausted"}, false, "❌ The job failed: llm_error retries exhausted."},
		{queue.Result{Status: queue.StatusDeadLettered, JobID: "abc", Attempt: 3}, false, "❌ The job was abandoned by its worker 3 times and was dropped. An operator can retry it with: odek queue retry abc"},
		{queue.Result{Status: queue.StatusSucceeded}, false, ""},
	}
	for _, tt := range tests {
		if got := ResultText("en", tt.res, tt.timedOut, 15*time.Minute); got != tt.want {
			t.Errorf("ResultText(%+v) = %q, want %q", tt.res, got, tt.want)
		}
	}
}
