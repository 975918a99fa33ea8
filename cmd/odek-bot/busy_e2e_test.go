package main_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Issue 26, busy policy "steer": a message sent while the chat's job runs
// on a worker (its own process, fed through real Redis) is confirmed at
// once, reaches that job's next model call as a user message after the
// tool result, and the job's one answer covers it: no second job runs.
func TestE2ESteerIntoAJobOnAnotherWorker(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	var reqs [][]llm.Message
	var firstEnded, steeredAt time.Time
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		reqs = append(reqs, r.Messages)
		n := len(reqs)
		if n == 2 {
			steeredAt = time.Now()
		}
		mu.Unlock()
		last := r.LastMessage()
		switch {
		case n == 1:
			<-release // the model is still working when "second" arrives
			mu.Lock()
			firstEnded = time.Now()
			mu.Unlock()
			return llmtest.CallTools(llmtest.Call{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`})
		case last.Role == "user" && strings.Contains(last.Content, "second"):
			return llmtest.Reply("covered first and second")
		}
		return llmtest.Reply("answer without the steered message")
	})
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_BUSY=steer", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "first")
	in.tg.Wait(t, 60*time.Second, "the first model call", func(*bottest.Server) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reqs) == 1
	})
	in.tg.UserMessage(1001, 1001, "second")
	in.tg.Wait(t, 30*time.Second, "the steer receipt", func(s *bottest.Server) bool { return visible(s, 1001, "↪ Added to the running job") })
	once.Do(func() { close(release) })
	in.tg.Wait(t, 60*time.Second, "the answer", func(s *bottest.Server) bool {
		return visible(s, 1001, "covered first and second") || visible(s, 1001, "answer without")
	})
	if !visible(in.tg, 1001, "covered first and second") {
		t.Fatalf("the job's answer did not cover the steered message: %q", in.tg.Visible(1001))
	}
	if visible(in.tg, 1001, "Queued") {
		t.Errorf("the steered message was queued as well: %q", in.tg.Visible(1001))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (one job)", len(reqs))
	}
	// The figure in docs/BENCHMARKS.md: from the end of the running model
	// call to the model request that carries the steered message (the
	// tool call between them included).
	t.Logf("steer latency: %v after the running model call ended", steeredAt.Sub(firstEnded).Round(time.Millisecond))
	second := reqs[1]
	n := len(second)
	if second[n-2].Role != "tool" || second[n-1].Role != "user" || second[n-1].Content != "second" {
		t.Fatalf("the second model call ends %+v, %+v; want the tool result, then the steered message", second[n-2], second[n-1])
	}
}

// Issue 26, busy policy "interrupt" chosen with /busy: a new message stops
// the running job on the worker; the chat is told at once and the stopped
// job's result says it was interrupted; its completed step stays in the
// session, so the new message's job sees the work done so far.
func TestE2EInterruptStopsTheRunningJobAndKeepsItsWork(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	var reqs [][]llm.Message
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		reqs = append(reqs, r.Messages)
		n := len(reqs)
		mu.Unlock()
		last := r.LastMessage()
		switch {
		case n == 1:
			return llmtest.CallTools(llmtest.Call{ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`})
		case n == 2:
			<-release // still thinking about "first" when "second" arrives
			return llmtest.Reply("answer to first")
		case last.Role == "user" && last.Content == "second":
			return llmtest.Reply("answer to second")
		}
		return llmtest.Reply("unexpected")
	})
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "/busy interrupt")
	in.tg.Wait(t, 30*time.Second, "the /busy answer", func(s *bottest.Server) bool { return visible(s, 1001, "interrupting the running job") })
	in.tg.UserMessage(1001, 1001, "first")
	in.tg.Wait(t, 60*time.Second, "the second model call of the first job", func(*bottest.Server) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reqs) == 2
	})
	in.tg.UserMessage(1001, 1001, "second")
	in.tg.Wait(t, 30*time.Second, "the interrupt receipt", func(s *bottest.Server) bool { return visible(s, 1001, "⏹ Stopping the running job") })
	in.tg.Wait(t, 60*time.Second, "the answer to the new message", func(s *bottest.Server) bool { return visible(s, 1001, "answer to second") })
	once.Do(func() { close(release) })
	if !visible(in.tg, 1001, "⏹ Interrupted by a newer message") {
		t.Errorf("the stopped job's result does not say it was interrupted: %q", in.tg.Visible(1001))
	}
	if visible(in.tg, 1001, "answer to first") {
		t.Errorf("the interrupted job's answer was delivered: %q", in.tg.Visible(1001))
	}
	mu.Lock()
	defer mu.Unlock()
	last := reqs[len(reqs)-1]
	var sawFirst, sawTool bool
	for _, m := range last {
		sawFirst = sawFirst || m.Role == "user" && m.Content == "first"
		sawTool = sawTool || m.Role == "tool"
	}
	if !sawFirst || !sawTool {
		t.Fatalf("the new job's request lacks the interrupted job's saved work (goal %v, tool result %v): %+v", sawFirst, sawTool, last)
	}
}
