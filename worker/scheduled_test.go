package worker_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
	"github.com/odekrun/odek/worker"
)

// fireJob is the job a schedule's fire enqueues.
func fireJob(t *testing.T, s schedule.Schedule) queue.Job {
	t.Helper()
	s, _, err := schedule.Prepare(s, schedule.Limits{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return schedule.BuildJob(s, s.Next)
}

// The rules of a schedule's fire are the worker's, on a real Redis queue
// and a real agent run against the fake model: a reminder is delivered
// without a model call; a quiet check-in that has nothing to report is
// acknowledged silent with no answer (and one that has something is
// delivered); every job's result goes through AfterResult.
func TestScheduledMessageAndQuietCheckIn(t *testing.T) {
	q := newQueue(t, "redis", queue.Options{})
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		if strings.Contains(r.LastMessage().Content, "disk") {
			return llmtest.Reply("The disk is 97% full.")
		}
		return llmtest.Reply(schedule.QuietNothing)
	})
	var mu sync.Mutex
	var after []queue.Result
	w := start(t, worker.Config{Queue: q, Run: agentRun(llm.URL), AfterResult: func(_ queue.Job, r queue.Result) {
		mu.Lock()
		after = append(after, r)
		mu.Unlock()
	}})

	msg := enqueue(t, q, fireJob(t, schedule.Schedule{ChatID: 7, Kind: schedule.KindMessage, Spec: "in 1m", Text: "Stretch your legs"}))
	res := waitResult(t, q, msg.ID)
	if res.Status != queue.StatusSucceeded || res.Answer != "⏰ Stretch your legs" || res.Silent || !res.NoModel {
		t.Fatalf("reminder result %+v", res)
	}
	if n := llm.Calls(); n != 0 {
		t.Fatalf("a reminder called the model %d times", n)
	}

	quiet := enqueue(t, q, fireJob(t, schedule.Schedule{ChatID: 7, Spec: "every 1h", Text: "anything new in the inbox?", Quiet: true}))
	res = waitResult(t, q, quiet.ID)
	if res.Status != queue.StatusSucceeded || !res.Silent || res.Answer != "" {
		t.Fatalf("quiet check-in with nothing to report: %+v", res)
	}
	if got := llm.Requests()[0].LastMessage().Content; !strings.Contains(got, schedule.QuietNothing) {
		t.Fatalf("the model was not told the convention: %q", got)
	}
	loud := enqueue(t, q, fireJob(t, schedule.Schedule{ChatID: 8, Spec: "every 1h", Text: "is the disk full?", Quiet: true}))
	res = waitResult(t, q, loud.ID)
	if res.Silent || res.Answer != "The disk is 97% full." {
		t.Fatalf("quiet check-in with news: %+v", res)
	}
	// The same answer on a job that is not a quiet fire is delivered.
	typed := enqueue(t, q, queue.Job{ChatID: 9, Goal: "say it"})
	if res := waitResult(t, q, typed.ID); res.Silent || res.Answer != schedule.QuietNothing {
		t.Fatalf("a typed job was silenced: %+v", res)
	}

	hs := httptest.NewServer(w.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"odek_schedule_messages_total 1\n", "odek_schedule_quiet_silenced_total 1\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(after)
		mu.Unlock()
		if n == 4 || time.Now().After(deadline) {
			if n != 4 {
				t.Fatalf("AfterResult saw %d results, want 4", n)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A scheduled job cannot wait for a human: its confirmations are denied
// as non_interactive without a question reaching the chat, unless the
// owner approved the tool ahead; a typed job's question goes to the chat.
func TestScheduledJobApprovalsAreNonInteractive(t *testing.T) {
	q := newQueue(t, "redis", queue.Options{})
	ask := func(tool string) string { return "odek: allow " + tool + " (code_execution, argv0=make)? [y/N] " }
	start(t, worker.Config{Queue: q, ApprovalTimeout: 300 * time.Millisecond,
		Run: func(ctx context.Context, job queue.Job, _ events.Sink, _ func(agent.SignalEvent), p tools.Prompter) (queue.Result, error) {
			var out []string
			for _, tool := range []string{"shell", "schedule"} {
				ok, err := p.Confirm(ctx, ask(tool))
				s := tool + "=" + map[bool]string{true: "yes", false: "no"}[ok]
				if err != nil {
					s += " (" + err.Error() + ")"
				}
				out = append(out, s)
			}
			return queue.Result{Answer: strings.Join(out, "; ")}, nil
		}})
	plain := enqueue(t, q, fireJob(t, schedule.Schedule{ChatID: 3, Spec: "every 1h", Text: "build"}))
	res := waitResult(t, q, plain.ID)
	if !strings.Contains(res.Answer, "shell=no (non_interactive") || !strings.Contains(res.Answer, "schedule=no (non_interactive") {
		t.Fatalf("scheduled job's confirmations: %q", res.Answer)
	}
	pre := enqueue(t, q, fireJob(t, schedule.Schedule{ChatID: 4, Spec: "every 1h", Text: "build", Approve: []string{"shell"}}))
	res = waitResult(t, q, pre.ID)
	if !strings.HasPrefix(res.Answer, "shell=yes; schedule=no (non_interactive") {
		t.Fatalf("with shell approved ahead: %q", res.Answer)
	}
	aps, err := q.(queue.Approvals).ReadApprovals(context.Background(), "fe", 10, 50*time.Millisecond)
	if err != nil || len(aps) != 0 {
		t.Fatalf("a scheduled job asked the chat: %v %v", aps, err)
	}
	// A typed job asks the chat (nobody answers here: the timeout denies).
	typed := enqueue(t, q, queue.Job{ChatID: 5, Goal: "build"})
	res = waitResult(t, q, typed.ID)
	if strings.Contains(res.Answer, "non_interactive") {
		t.Fatalf("a typed job was treated as scheduled: %q", res.Answer)
	}
}
