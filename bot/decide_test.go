package bot

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/queue"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := rate.NewLimiter(1, 3)
	var ok bool
	var wait time.Duration
	for i := range 3 {
		if ok, _ = takeAt(b, t0); !ok {
			t.Fatalf("take %d refused within burst", i)
		}
	}
	if ok, wait = takeAt(b, t0); ok || wait != time.Second {
		t.Fatalf("4th take: ok %v wait %v; want refused, 1s", ok, wait)
	}
	if ok, _ = takeAt(b, t0.Add(time.Second)); !ok {
		t.Fatal("refill after 1 s refused")
	}
}

func TestBudgetAndClock(t *testing.T) {
	for _, c := range []struct {
		budget, used, reserved, cap int64
		verdict                     budgetVerdict
	}{
		{0, 1e9, 1e9, 0, budgetOK},       // no budget: no cap
		{1000, 0, 0, 1000, budgetOK},     // the whole day
		{1000, 999, 0, 1, budgetOK},      // what is left
		{1000, 1000, 0, 0, budgetSpent},  // spent
		{1000, 1200, 0, 0, budgetSpent},  // overrun by a last model call
		{1000, 300, 700, 0, budgetHeld},  // the rest is held by a running job
		{1000, 300, 600, 100, budgetOK},  // the part no job holds
		{1000, 300, 9000, 0, budgetHeld}, // restored reservations past the day
	} {
		cap, v := jobAllowance(c.budget, c.used, c.reserved)
		if cap != c.cap || v != c.verdict {
			t.Errorf("jobAllowance(%d, %d, %d) = %d, %v; want %d, %v", c.budget, c.used, c.reserved, cap, v, c.cap, c.verdict)
		}
	}
	if shouldWarn(usage{tokens: 799}, 1000) || !shouldWarn(usage{tokens: 800}, 1000) || shouldWarn(usage{tokens: 900, warned: true}, 1000) || shouldWarn(usage{tokens: 5}, 0) {
		t.Error("shouldWarn")
	}
	late := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	u := usage{day: utcDay(late), tokens: 500, warned: true}
	if got := u.rollover(late.Add(2 * time.Minute)); got.tokens != 0 || got.warned || got.day != "2026-03-02" {
		t.Errorf("rollover at midnight UTC: %+v", got)
	}
	if got := u.rollover(late); got.tokens != 500 {
		t.Errorf("same day reset: %+v", got)
	}
	if d := untilMidnightUTC(late); d != time.Minute {
		t.Errorf("untilMidnightUTC = %v", d)
	}
	// Midnight is UTC, not local: 23:30 in UTC-5 is 04:30 UTC next day.
	ny := time.FixedZone("EST", -5*3600)
	if d := untilMidnightUTC(time.Date(2026, 3, 1, 23, 30, 0, 0, ny)); d != 19*time.Hour+30*time.Minute {
		t.Errorf("untilMidnightUTC(EST) = %v", d)
	}
	for attempt, want := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 10: 30 * time.Second} {
		if got := tgclient.Backoff(attempt, 30*time.Second); got != want {
			t.Errorf("backoff(%d) = %v, want %v", attempt, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "1 s", 12 * time.Second: "12 s", 3 * time.Minute: "3 min", 5*time.Hour + 3*time.Minute: "5 h 3 min"} {
		if got := humanWait(d); got != want {
			t.Errorf("humanWait(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestAccess(t *testing.T) {
	a := NewAccess([]int64{1}, []int64{-100}, false)
	tests := []struct {
		user, chat int64
		want       bool
	}{
		{1, 1, true}, {1, -5, true}, {2, -100, true}, {2, 2, false}, {0, 5, false}, {0, -100, true},
	}
	for _, tt := range tests {
		if got := a.Allows(tt.user, tt.chat); got != tt.want {
			t.Errorf("Allows(%d, %d) = %v", tt.user, tt.chat, got)
		}
	}
	if !NewAccess(nil, nil, true).Allows(42, 42) || (Access{}).Allows(1, 1) {
		t.Error("allow-all / zero Access")
	}
}

func TestParseIDs(t *testing.T) {
	ids, err := ParseIDs(" 12, -100345 ,,7")
	if err != nil || fmt.Sprint(ids) != "[12 -100345 7]" {
		t.Errorf("ParseIDs = %v, %v", ids, err)
	}
	if _, err := ParseIDs("12,@bob"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "@bob") {
		t.Errorf("bad id: %v", err)
	}
}

func TestStatusText(t *testing.T) {
	var s status
	if got := s.text(2, 0); got != "📥 Queued — position 2. /stop cancels." {
		t.Errorf("queued: %q", got)
	}
	if got := s.text(0, 0); got != "⏳ Starting…" {
		t.Errorf("starting: %q", got)
	}
	s = s.apply([]byte(`{"schema":"odek.progress/v1","job_id":"j","state":"running","attempt":2,"iteration":3,"last_tool":"shell","input_tokens":1000,"output_tokens":234,"elapsed_ms":12000}`))
	s = s.apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_started","seq":9,"run_id":"r","iteration":3,"tool":"shell","timestamp":"2026-01-01T00:00:00Z","data":{"args_summary":{"argv0":"go\ntest","class":"safe"},"args":"go test -token=SECRET"}}`))
	s = s.apply([]byte(`{"schema":"odek.event/v1","type":"plan_updated","seq":10,"run_id":"r","timestamp":"2026-01-01T00:00:00Z","data":{"blocked":0,"done":2,"in_progress":1,"pending":2,"steps":5,"version":3}}`))
	s = s.apply([]byte(`not json`))
	s = s.apply([]byte(`{"schema":"other/v9","state":"finished"}`))
	want := "⏳ Working · step 3 · 🔧 shell: go test · plan 2/5 · 1,234 tokens · 12 s · attempt 2"
	if got := s.text(0, 5*time.Second); got != want {
		t.Errorf("text =\n %q\nwant\n %q", got, want)
	}
	if s.finished {
		t.Error("an unknown schema finished the job")
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
		if got := resultText(tt.res, tt.timedOut, 15*time.Minute); got != tt.want {
			t.Errorf("resultText(%+v) = %q, want %q", tt.res, got, tt.want)
		}
	}
}

func TestApprovalData(t *testing.T) {
	id := strings.Repeat("a1", 16)
	for _, allow := range []bool{true, false} {
		d := approvalData(id, allow)
		if len(d) > 64 {
			t.Fatalf("callback data %d bytes > 64", len(d))
		}
		gotID, gotAllow, ok := parseApprovalData(d)
		if !ok || gotID != id || gotAllow != allow {
			t.Errorf("round trip %q: %q %v %v", d, gotID, gotAllow, ok)
		}
	}
	for _, bad := range []string{"", "ap:", "ap::y", "ap:x:maybe", "xx:abc:y", "ap:a/b:y", "ap:" + strings.Repeat("a", 80) + ":y"} {
		if _, _, ok := parseApprovalData(bad); ok {
			t.Errorf("parseApprovalData(%q) accepted", bad)
		}
	}
}

func TestConfigDefaultsAndEndpoint(t *testing.T) {
	c := Config{APIEndpoint: "http://127.0.0.1:8081/"}.withDefaults()
	if c.APIEndpoint != "http://127.0.0.1:8081/bot%s/%s" || c.AgentTimeout != 900*time.Second || c.UserJobsPerMinute != 6 ||
		c.PollTimeout != 30*time.Second || c.MaxUploadBytes != MaxUploadBytes || c.GlobalRate != 25 {
		t.Errorf("defaults: %+v", c)
	}
	if got := (Config{}).withDefaults().APIEndpoint; got != DefaultAPIEndpoint {
		t.Errorf("default endpoint %q", got)
	}
}

func TestEditInterval(t *testing.T) {
	if editInterval(42, time.Second) != time.Second || editInterval(-100, time.Second) != 3*time.Second {
		t.Error("editInterval")
	}
}

// FuzzParseApprovalData: callback data comes from Telegram clients.
func FuzzParseApprovalData(f *testing.F) {
	f.Add("ap:0123abcd:y")
	f.Add("ap::n")
	f.Add("ap:\x00:y")
	f.Fuzz(func(t *testing.T, s string) {
		id, allow, ok := parseApprovalData(s)
		if ok && approvalData(id, allow) != s {
			t.Fatalf("accepted %q but it does not round-trip", s)
		}
	})
}

// FuzzStatusApply: progress entries come from workers; any bytes must
// leave a status whose text is one line set within bounds.
func FuzzStatusApply(f *testing.F) {
	f.Add([]byte(`{"schema":"odek.event/v1","type":"tool_call_started","tool":"shell","data":{"args_summary":{"argv0":"ls"}}}`))
	f.Add([]byte(`{"schema":"odek.progress/v1","iteration":-5,"last_tool":"x\ny","elapsed_ms":-1}`))
	f.Add([]byte(`{"schema":"odek.event/v1","type":"plan_updated","data":{"done":"x","steps":1e300}}`))
	f.Add([]byte(`{"schema":"odek.event/v1","type":"plan_updated","data":{"done":-3,"steps":4}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := status{}.apply(data)
		text := s.text(0, time.Second)
		if strings.ContainsAny(text, "\n\r") || TextLen(text) > 400 {
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
	for _, set := range []map[string]map[string]string{texts, moreTexts} {
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
