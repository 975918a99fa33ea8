package embedded

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
)

// FuzzParseRecords: records read back from the store file never panic the
// loader, what parses names a job in a known state, and a sent record
// that parses is in range (an out-of-range one would skip an answer).
func FuzzParseRecords(f *testing.F) {
	good, _ := json.Marshal(jobRec{Job: queue.Job{ID: "a", ChatID: 1, Goal: "g"}, Seq: 3, State: queue.StateRunning, Attempt: 1})
	done, _ := json.Marshal(jobRec{Job: queue.Job{ID: "b", ChatID: -5, Goal: "g"}, State: queue.StateDone, Result: &queue.Result{Status: queue.StatusSucceeded}})
	for _, s := range [][]byte{good, done, []byte(`{"job":{"id":"x","chat_id":1},"state":"bogus"}`), []byte(`{"state":"done","job":{"id":"x","chat_id":1}}`),
		[]byte(`null`), []byte(`{`), idemVal("job1", time.Unix(100, 0)), {1, 2, 3},
		[]byte(`{"steps":2,"ids":[5,6]}`), []byte(`{"steps":100000}`), []byte(`{"steps":-1}`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := parseJobRec(b); err == nil {
			if r.Job.ID == "" || r.Job.ChatID == 0 || (r.State == queue.StateDone && r.Result == nil) {
				t.Fatalf("accepted a record naming no job or a result-less finished job: %+v", r)
			}
		}
		if s, ok := parseSent(b); ok && (s.Steps < 1 || s.Steps > queue.MaxSentSteps || len(s.MessageIDs) > queue.MaxSentIDs) {
			t.Fatalf("accepted a sent record out of range: %+v", s)
		}
		if id, _, err := parseIdem(b); err == nil && (id == "" || len(id) > queue.MaxIDLen) {
			t.Fatalf("accepted idempotency record with id %q", id)
		}
	})
}

func TestParseRecordErrorsNameTheField(t *testing.T) {
	for in, want := range map[string]string{
		`{"job":{"id":"x","chat_id":1},"state":"bogus"}`: `unknown state "bogus"`,
		`{"job":{"id":"x","chat_id":1},"state":"done"}`:  "has no result",
		`{"job":{"chat_id":1},"state":"queued"}`:         "names no job",
		`[`:                                              "not valid JSON",
	} {
		if _, err := parseJobRec([]byte(in)); err == nil || !contains(err.Error(), want) {
			t.Errorf("parseJobRec(%s) = %v; want an error saying %q", in, err, want)
		}
	}
	if _, _, err := parseIdem([]byte{1}); err == nil || !contains(err.Error(), "idempotency record of 1 bytes") {
		t.Errorf("parseIdem(short) = %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// FuzzAdminRequests: the admin socket's request decoders (input from
// another local process) never panic, and what they accept is in range:
// an id of 1..MaxIDLen bytes, a non-negative age, a job that re-encodes
// to something the decoder accepts again.
func FuzzAdminRequests(f *testing.F) {
	for _, s := range []string{`{"chat_id":1,"goal":"g"}`, `{"chat_id":1,"goal":"g","budget":{"max_tool_calls":2}}`,
		`{"id":"job-1"}`, `{"id":""}`, `{"older_than_ns":0}`, `{"older_than_ns":-1}`, `{}`, `null`, `[]`, `{"id":"a"} x`,
		`{"chat_id":1,"nope":2}`, ` {"id":"a"}`, `{"id":1}`, "{\"id\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, err := decodeID("cancel", b); err == nil && (id == "" || len(id) > queue.MaxIDLen) {
			t.Fatalf("accepted id %q", id)
		} else if err != nil && !strings.HasPrefix(err.Error(), "cancel request: ") {
			t.Fatalf("error does not name the request: %v", err)
		}
		if d, err := decodePurge(b); err == nil && d < 0 {
			t.Fatalf("accepted a negative age %v", d)
		}
		if j, err := decodeSubmit(b); err == nil {
			again, err := json.Marshal(j)
			if err != nil {
				t.Fatalf("an accepted job does not encode: %v", err)
			}
			if _, err := decodeSubmit(again); err != nil {
				t.Fatalf("an accepted job, re-encoded, is refused: %v (%s)", err, again)
			}
		}
	})
}
