package main_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// Issue 21: the daily budget is enforced during a job, not only at its
// start. Chat 1001 has 300 of its 1,000 tokens left when it starts a job
// whose model calls a tool for ever at 100 tokens a call; the job (a real
// odek worker, fed through real Redis) stops at the chat's remaining
// allowance with a budget outcome, one model call past it at most.
func TestE2EDailyBudgetStopsARunningJob(t *testing.T) {
	var mu sync.Mutex
	looped := 0
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		goal := ""
		for _, m := range r.Messages {
			if m.Role == "user" {
				goal = m.Content
			}
		}
		if strings.Contains(goal, "warm up") {
			turn := llmtest.Reply("warmed up")
			turn.Usage = &llm.Usage{PromptTokens: 600, CompletionTokens: 100}
			return turn
		}
		mu.Lock()
		looped++
		n := looped
		mu.Unlock()
		turn := llmtest.CallTools(llmtest.Call{ID: fmt.Sprintf("c%d", n), Name: "list_dir", Arguments: `{"path":"."}`})
		if n > 40 {
			turn = llmtest.Reply("looped 40 times") // the old code's end
		}
		turn.Usage = &llm.Usage{PromptTokens: 80, CompletionTokens: 20}
		return turn
	})
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_DAILY_TOKEN_BUDGET=1000", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "warm up")
	in.tg.Wait(t, 60*time.Second, "the first answer", func(s *bottest.Server) bool { return visible(s, 1001, "warmed up") })
	in.tg.UserMessage(1001, 1001, "loop forever")
	in.tg.Wait(t, 60*time.Second, "the looping job's end", func(s *bottest.Server) bool {
		return visible(s, 1001, "daily budget") || visible(s, 1001, "looped 40 times")
	})
	mu.Lock()
	calls := looped
	mu.Unlock()
	// 300 tokens left at 100 a call: the fourth call goes past it.
	if calls > 4 {
		t.Errorf("the job made %d model calls (%d tokens) with 300 tokens of the day left", calls, calls*100)
	}
	if !visible(in.tg, 1001, "The job stopped: it used what was left of this chat's daily budget of 1,000 tokens") {
		t.Errorf("no budget outcome in the chat: %q", in.tg.Visible(1001))
	}
}

// With a daily budget set (bot.env.example's 200,000 tokens) and no
// per-job cap, a message sent while the chat's job runs waits behind it
// and then runs with what the day has left; it is not refused because the
// running job reserved the rest of the day. Real odek-bot, real worker,
// real Redis.
func TestE2EMessageDuringARunningJobQueuesUnderADailyBudget(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var goals []string
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		goal := ""
		for _, m := range r.Messages {
			if m.Role == "user" {
				goal = m.Content
			}
		}
		mu.Lock()
		goals = append(goals, goal)
		mu.Unlock()
		if strings.Contains(goal, "first") {
			<-release
		}
		turn := llmtest.Reply("answer to " + goal)
		turn.Usage = &llm.Usage{PromptTokens: 900, CompletionTokens: 100}
		return turn
	})
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_DAILY_TOKEN_BUDGET=200000", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "first")
	in.tg.Wait(t, 60*time.Second, "the first job's model call", func(*bottest.Server) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(goals) == 1
	})
	in.tg.UserMessage(1001, 1001, "second")
	in.tg.Wait(t, 30*time.Second, "the second message's receipt", func(s *bottest.Server) bool {
		return visible(s, 1001, "Queued") || visible(s, 1001, "reserved")
	})
	close(release)
	in.tg.Wait(t, 60*time.Second, "both answers", func(s *bottest.Server) bool {
		return visible(s, 1001, "answer to first") && visible(s, 1001, "answer to second") || visible(s, 1001, "reserved")
	})
	if visible(in.tg, 1001, "reserved") {
		t.Fatalf("the message sent while the job ran was refused: %q", in.tg.Visible(1001))
	}
}

// Issue 29: /compact in the chat folds its conversation now. Real
// odek-bot (given a model key, so it has a compactor), real worker, real
// Redis: after four exchanges /compact makes one digest side call and
// saves the session, the chat is told, /status shows the compaction, and
// the next job's request carries the digest instead of the folded turns.
func TestE2ECompactCommand(t *testing.T) {
	var mu sync.Mutex
	var lastReq []llm.Message
	digestCalls := 0
	model := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		if len(r.Messages) > 0 && r.Messages[0].Role == "system" && strings.Contains(r.Messages[0].Content, "You keep the memory of a long conversation") {
			digestCalls++
			turn := llmtest.Reply("## Facts\n- the user's cat is called Mimi")
			turn.Usage = &llm.Usage{PromptTokens: 400, CompletionTokens: 20}
			return turn
		}
		lastReq = r.Messages
		goal := r.Messages[len(r.Messages)-1].Content
		turn := llmtest.Reply("noted: " + goal)
		turn.Usage = &llm.Usage{PromptTokens: 100, CompletionTokens: 10}
		return turn
	})
	in := newInstance(t, model.URL, "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1")
	in.worker("w1")
	for _, m := range []string{"my cat is called Mimi", "I live in Bonn", "I like tea", "I work at night"} {
		in.tg.UserMessage(1001, 1001, m)
		in.tg.Wait(t, 60*time.Second, "the answer to "+m, func(s *bottest.Server) bool { return visible(s, 1001, "noted: "+m) })
	}
	in.tg.UserMessage(1001, 1001, "/compact")
	in.tg.Wait(t, 60*time.Second, "the compaction", func(s *bottest.Server) bool {
		return visible(s, 1001, "🗜 Compacted") || visible(s, 1001, "could not be compacted") || visible(s, 1001, "not available")
	})
	if !visible(in.tg, 1001, "🗜 Compacted: ") {
		t.Fatalf("no compaction: %q", in.tg.Visible(1001))
	}
	in.tg.UserMessage(1001, 1001, "/status")
	in.tg.Wait(t, 30*time.Second, "the gauge", func(s *bottest.Server) bool { return visible(s, 1001, "· compacted ") })
	in.tg.UserMessage(1001, 1001, "what is my cat called?")
	in.tg.Wait(t, 60*time.Second, "the answer after /compact", func(s *bottest.Server) bool { return visible(s, 1001, "noted: what is my cat called?") })
	mu.Lock()
	defer mu.Unlock()
	if digestCalls != 1 {
		t.Errorf("%d digest side calls, want 1", digestCalls)
	}
	var digest, folded bool
	for _, m := range lastReq {
		digest = digest || strings.Contains(m.Content, "[odek: digest") && strings.Contains(m.Content, "Mimi")
		folded = folded || m.Content == "I live in Bonn"
	}
	if !digest || folded {
		t.Errorf("the request after /compact: digest %v, folded turn still there %v", digest, folded)
	}
}
