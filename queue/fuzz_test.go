package queue

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzPrepareJob feeds arbitrary (user-controlled) job fields through the
// validation both implementations share: it either rejects them with a
// queue error or produces a payload within the cap that decodes back to the
// same job.
func FuzzPrepareJob(f *testing.F) {
	f.Add("", int64(1), "hello", []byte(nil), "upd-1")
	f.Add("job:1", int64(-100123), "goal\x00with nul \u2028", []byte(`{"max_iterations":2}`), "")
	f.Add("bad id", int64(0), "", []byte("{"), "k")
	f.Add("x", int64(5), "\xff\xfe", []byte(`null`), "\"quote")
	o := Options{MaxPayloadBytes: 512, Now: func() time.Time { return time.Unix(1700000000, 0) }}.withDefaults()
	f.Fuzz(func(t *testing.T, id string, chat int64, goal string, budget []byte, key string) {
		in := Job{ID: id, ChatID: chat, Goal: goal, IdempotencyKey: key}
		if b := new(Budget); json.Unmarshal(budget, b) == nil {
			in.Budget = b
		}
		j, b, err := prepareJob(in, o, func() string { return "generated" })
		if err != nil {
			if !errors.Is(err, ErrInvalidJob) && !errors.Is(err, ErrPayloadTooLarge) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(b) > o.MaxPayloadBytes || !validID(j.ID) || j.ChatID == 0 || j.Goal == "" {
			t.Fatalf("accepted a job that breaks the rules: %d bytes, %+v", len(b), j)
		}
		var back Job
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("payload does not decode: %v", err)
		}
		if !reflect.DeepEqual(back.Budget, j.Budget) || !reflect.DeepEqual(back.ID, j.ID) || back.CreatedAt != j.CreatedAt || back.ChatID != j.ChatID || back.IdempotencyKey != key {
			t.Fatalf("round trip changed the job: %+v vs %+v", back, j)
		}
	})
}

// FuzzPrepareApproval: a question (built from a tool call the model made,
// so untrusted) is either rejected with a queue error or encoded so it
// decodes back to the same text, within MaxQuestionBytes.
func FuzzPrepareApproval(f *testing.F) {
	f.Add("job-1", int64(5), "run `rm -rf /`?")
	f.Add("bad id", int64(1), "x")
	f.Add("j", int64(0), "")
	f.Add("j", int64(-7), "\xff\xfe invalid utf-8")
	f.Add("j", int64(3), "line\nbreak \u2028 <b>html</b> \"quoted\"")
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, jobID string, chat int64, question string) {
		a, b, err := prepareApproval(Approval{JobID: jobID, ChatID: chat, Question: question}, now)
		if err != nil {
			if !errors.Is(err, ErrInvalidJob) && !errors.Is(err, ErrPayloadTooLarge) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(question) > MaxQuestionBytes || !validID(a.JobID) || !validID(a.ID) || !a.Deadline.Equal(now.Add(DefaultApprovalTimeout)) {
			t.Fatalf("accepted an approval that breaks the rules: %+v", a)
		}
		var back Approval
		if err := json.Unmarshal(b, &back); err != nil || back.Question != question || back.ID != a.ID || back.ChatID != chat {
			t.Fatalf("round trip: %+v, %v; want question %q", back, err, question)
		}
	})
}

// FuzzParseHistory: the history field and lease tokens read back from Redis
// never make the readers panic, and a well-formed line comes back as
// written.
func FuzzParseHistory(f *testing.F) {
	f.Add("1\tw1\tlease expired: worker died or stalled (beside other jobs)\n2\tw2\tlease expired: worker died or stalled (alone)\n", "1796158528166-0123456789abcdef.3")
	f.Add("", "")
	f.Add("x\ty\n\t\t\n3\t\tz", "-1-")
	f.Add("99999999999999999999\tw\tr", "99999999999999999999-x")
	f.Fuzz(func(t *testing.T, hist, tok string) {
		for _, e := range parseHistory(hist) {
			if strings.Contains(e.Reason, "\n") || strings.Contains(e.Worker, "\t") {
				t.Fatalf("entry %+v spans a line or a field", e)
			}
		}
		_ = tokenTime(tok)
		_ = streamIDTime(tok)
		if !strings.ContainsAny(tok, "\t\n") && tok != "" {
			line := "7\t" + tok + "\treason " + tok
			if got := parseHistory(line); len(got) != 1 || got[0].Attempt != 7 || got[0].Worker != tok || got[0].Reason != "reason "+tok {
				t.Fatalf("parseHistory(%q) = %+v", line, got)
			}
		}
	})
}
