package main_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
)

// Issue 27: three real `odek worker` processes fire an `every 1s`
// schedule (allowed by --min-interval) while one of them is SIGKILLed and
// restarted: every scheduled time from the first fire to the last is
// enqueued exactly once (its idempotency key is in Redis, once), and every
// fire's job publishes exactly one result.
func TestScheduleFiresOnceAcrossWorkers(t *testing.T) {
	_, llm := startGate(t)
	e := newQueueEnv(t, llm.URL, false, 2*time.Second, 3)
	ws := []*workerProc{e.startWorker("w1"), e.startWorker("w2"), e.startWorker("w3")}
	add := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "schedule", "add", "--chat", "9", "--every", "1s", "--min-interval", "1s", "say tick")
	if add.code != 0 {
		t.Fatalf("schedule add: %d %s", add.code, add.stderr)
	}
	id := strings.TrimSpace(add.stdout)
	got := map[string]queue.Result{}
	waitFires := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); len(got) < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d results within 60 s, want %d", len(got), n)
			}
			e.drainResults(got, 200*time.Millisecond)
		}
	}
	waitFires(4)
	ws[1].kill(t)
	e.startWorker("w2-restarted")
	waitFires(10)
	ws[0].kill(t)
	waitFires(14)
	if out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "schedule", "pause", id); out.code != 0 {
		t.Fatalf("pause: %s", out.stderr)
	}
	// Fires claimed by the killed workers are taken over after the lease.
	rc := e.srv.Client()
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := rc.ZCard(ctx, "{odek}:sched:firing").Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fires still pending", n)
		}
		e.drainResults(got, 200*time.Millisecond)
	}
	show := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "schedule", "show", "--json", id)
	var s schedule.Schedule
	if err := json.Unmarshal([]byte(show.stdout), &s); err != nil {
		t.Fatalf("show --json: %v %q", err, show.stdout)
	}
	if s.Misses != 0 || s.Fires < 14 {
		t.Fatalf("schedule after the run: %+v", s)
	}
	// Every second from the anchor to the last fire has exactly one key,
	// and there are no others.
	keys, err := rc.Keys(ctx, "{odek}:idem:sched:"+id+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	k := int(s.Last.Sub(s.Anchor) / time.Second)
	if len(keys) != k || int64(k) != s.Fires {
		t.Fatalf("%d idempotency keys, %d fires, want %d (one per second from %s to %s)", len(keys), s.Fires, k, s.Anchor, s.Last)
	}
	have := map[string]bool{}
	for _, key := range keys {
		have[key] = true
	}
	for i := 1; i <= k; i++ {
		at := s.Anchor.Add(time.Duration(i) * time.Second)
		if !have["{odek}:idem:"+schedule.FireKey(s, at)] {
			t.Fatalf("no job for the fire at %s", at)
		}
	}
	// Every fire's job answers once (drainResults fails on a second result).
	for deadline := time.Now().Add(60 * time.Second); len(got) < k && time.Now().Before(deadline); {
		e.drainResults(got, 200*time.Millisecond)
	}
	e.drainResults(got, time.Second)
	if len(got) != k {
		t.Fatalf("%d results, want %d", len(got), k)
	}
	for jid, r := range got {
		ms, err := strconv.ParseInt(strings.TrimPrefix(jid, "sched-"+id+"-"), 10, 64)
		if err != nil || r.Status != queue.StatusSucceeded || r.Answer != "done: say tick" || r.ChatID != 9 {
			t.Fatalf("result %s: %+v", jid, r)
		}
		if at := time.UnixMilli(ms); at.After(s.Last) || !at.After(s.Anchor) {
			t.Fatalf("job %s outside the fires", jid)
		}
	}
	t.Logf("%d fires, each once, over 3 workers with 2 SIGKILLs", k)
}

// Without Redis, `odek schedule` works on the embedded store file that
// odek-bot fires from; bad input exits 3 with the field named.
func TestScheduleCLIEmbeddedFile(t *testing.T) {
	env := []string{"ODEK_SCHEDULE_FILE=" + t.TempDir() + "/s.json"}
	run := func(args ...string) runOut {
		t.Helper()
		return runOdekEnv(t, "http://127.0.0.1:1", t.TempDir(), env, append([]string{"schedule"}, args...)...)
	}
	add := run("add", "--chat", "42", "--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin", "summarise the open issues")
	if add.code != 0 {
		t.Fatalf("add: %d %s", add.code, add.stderr)
	}
	id := strings.TrimSpace(add.stdout)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"add", "--chat", "42", "--cron", "0 25 * * *", "x"}, 3, `cron hour "25"`},
		{[]string{"add", "--chat", "42", "--every", "30s", "x"}, 3, "minimum interval of 1m0s"},
		{[]string{"add", "--chat", "42", "--cron", "0 9 * * *", "--tz", "Mars/Base", "x"}, 3, `tz "Mars/Base": unknown`},
		{[]string{"add", "--chat", "42", "--every", "1h", "--at", "2027-01-01T00:00:00Z", "x"}, 3, "exactly one of"},
		{[]string{"add", "--every", "1h", "x"}, 3, "--chat"},
		{[]string{"show", "0123456789abcdef"}, 1, "not found"},
		{[]string{"next", id, "--count", "2"}, 0, "09:00:00 CET"},
		{[]string{"pause", id}, 0, "enabled false"},
		{[]string{"resume", id}, 0, "enabled true"},
	} {
		out := run(tc.args...)
		if out.code != tc.code || !strings.Contains(out.stdout+out.stderr, tc.want) {
			t.Errorf("%v: exit %d %q %q, want %d and %q", tc.args, out.code, out.stdout, out.stderr, tc.code, tc.want)
		}
	}
	list := run("list", "--json")
	var s schedule.Schedule
	if err := json.Unmarshal([]byte(list.stdout), &s); err != nil || s.ID != id || s.Spec != "cron 0 9 * * 1-5" || s.TZ != "Europe/Berlin" || !s.Enabled {
		t.Fatalf("list --json: %q %v", list.stdout, err)
	}
	if out := run("rm", id); out.code != 0 {
		t.Fatalf("rm: %s", out.stderr)
	}
	if out := run("list"); strings.Contains(out.stdout, id) {
		t.Fatalf("listed after rm: %s", out.stdout)
	}
}
