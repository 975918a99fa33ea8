package bot

import (
	"context"
	"fmt"
	"github.com/odekrun/odek/bot/chatcore"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// The question internal/tools asks, as a worker forwards it.
const shellQuestion = "odek: allow shell (code_execution, argv0=python3, command=python3 build.py --fast)? [y/N] "

// keyboardMessage waits for a message with an inline keyboard in chat.
func (h *harness) keyboardMessage(chatID int64) bottest.Message {
	h.t.Helper()
	var kb bottest.Message
	h.tg.Wait(h.t, wait, "approval keyboard", func(s *bottest.Server) bool {
		for _, m := range s.Messages(chatID) {
			if len(m.Keyboard) > 0 {
				kb = m
				return true
			}
		}
		return false
	})
	return kb
}

// Issue 17 point 5: /stop closes a pending approval prompt: the buttons go,
// the prompt says why, the worker's question is denied, and a late press
// is told the question is closed (not "Approved once").
func TestStopClosesPendingApproval(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	answers := make(chan bool, 1)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		a, err := q.Ask(ctx, queue.Approval{JobID: l.Job.ID, ChatID: l.Job.ChatID, Question: shellQuestion, Deadline: time.Now().Add(time.Minute)})
		if err != nil {
			t.Error(err)
			return queue.Result{}
		}
		allow, ok, _ := q.AwaitAnswer(ctx, a.ID, time.Minute)
		answers <- allow && ok
		<-ctx.Done()
		return queue.Result{Status: queue.StatusCanceled}
	})
	h.tg.UserMessage(alice, alice, "build it")
	kb := h.keyboardMessage(alice)
	h.waitVisible(alice, "Waiting for your approval")
	h.tg.UserMessage(alice, alice, "/stop")
	h.waitVisible(alice, "Closed: the job was stopped")
	if allow := <-answers; allow {
		t.Fatal("the closed approval reached the worker as allow")
	}
	for _, m := range h.tg.Messages(alice) {
		if m.ID == kb.ID && len(m.Keyboard) > 0 {
			t.Errorf("the closed prompt keeps its buttons: %+v", m)
		}
	}
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[0][0])
	calls := h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) == 1 }, "answerCallbackQuery")
	if got := calls[0].Params.Get("text"); !strings.Contains(got, "no longer open") {
		t.Errorf("late press answered %q", got)
	}
	if hasText(h.tg.Visible(alice), "Approved once") {
		t.Errorf("a stopped job's approval shows as approved: %q", h.tg.Visible(alice))
	}
}

// Issue 17 point 6: the prompt shows the redacted command line and the
// class in chat words, with the deadline, and no terminal "[y/N]".
func TestApprovalPromptInChatWords(t *testing.T) {
	got := approvalText(shellQuestion)
	want := "The agent wants to use shell.\nClass: code_execution (runs a program)\ncommand: python3 build.py --fast\nargv0: python3"
	if got != want {
		t.Errorf("approvalText\n got %q\nwant %q", got, want)
	}
	if got := approvalText("shell: rm -rf build/ (dangerous)"); got != "shell: rm -rf build/ (dangerous)" {
		t.Errorf("free-form question: %q", got)
	}
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		a, _ := q.Ask(ctx, queue.Approval{JobID: l.Job.ID, ChatID: l.Job.ChatID, Question: shellQuestion, Deadline: time.Now().Add(2 * time.Minute)})
		q.AwaitAnswer(ctx, a.ID, time.Minute)
		return queue.Result{Answer: "ok"}
	})
	h.tg.UserMessage(alice, alice, "build")
	kb := h.keyboardMessage(alice)
	for _, want := range []string{"command: python3 build.py --fast", "Class: code_execution (runs a program)", "UTC (in 2 min)"} {
		if !strings.Contains(kb.Shown, want) {
			t.Errorf("prompt lacks %q: %q", want, kb.Shown)
		}
	}
	if strings.Contains(kb.Shown, "[y/N]") {
		t.Errorf("terminal text under buttons: %q", kb.Shown)
	}
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[0][1])
	h.waitVisible(alice, "❌ Denied by")
}

// Issue 17 point 4: a failure is one message with its footer inline.
func TestFailureNoticeCarriesFooter(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Status: queue.StatusFailed, Error: "model unreachable", DurationMS: 1500}
	})
	h.tg.UserMessage(alice, alice, "go")
	h.waitVisible(alice, "The job failed")
	vis := h.tg.Visible(alice)
	if len(vis) != 1 || !strings.Contains(vis[0], "❌ The job failed: model unreachable.") || !strings.Contains(vis[0], "0 tokens · 1.5 s") {
		t.Errorf("visible = %q, want one message with the notice and its footer", vis)
	}
}

// Issue 17 point 10: a fast answer comes without a "Starting…" status
// flashing before it, and a job that runs shows its time since the
// question (not "0.0 s" after a second or two).
func TestFastAnswerHasNoStatusFlash(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result { return queue.Result{Answer: "quick"} })
	h.tg.UserMessage(alice, alice, "hi")
	h.waitVisible(alice, "quick")
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Text, "Starting") || strings.Contains(m.Text, "Working") {
			t.Errorf("a status message flashed before a fast answer: %+v", m)
		}
	}
	if n := len(h.tg.Calls("deleteMessage")); n != 0 {
		t.Errorf("%d deleteMessage calls for a fast answer", n)
	}
}

func TestStatusCountsFromTheQuestion(t *testing.T) {
	now := time.Unix(1000, 0)
	js := &jobState{askedAt: now, startedAt: now.Add(1500 * time.Millisecond), st: chatcore.Status{Started: true}}
	if got := js.statusText(0, now.Add(2500*time.Millisecond)); !strings.Contains(got, "2.0 s") {
		t.Errorf("status %q, want the 2 s since the question", got)
	}
}

// Issue 17 point 9: when the bot stops, a running job's status message
// says what becomes of it instead of "⏳ Working" staying forever: it keeps
// running (distributed) or must be resent (embedded, told once).
func TestShutdownTellsChatsOfRunningJobs(t *testing.T) {
	for _, volatile := range []bool{false, true} {
		t.Run(fmt.Sprint("volatile=", volatile), func(t *testing.T) {
			q := queue.NewMemory(queue.Options{})
			st := &memState{}
			h := startBot(t, q, func(c *Config) { c.VolatileQueue = volatile; c.State = st; c.StatusDelay = -1 })
			started := make(chan struct{})
			worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
				summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Attempt: 1})
				close(started)
				<-ctx.Done()
				return queue.Result{Status: queue.StatusCanceled}
			})
			h.tg.UserMessage(alice, alice, "long job")
			<-started
			h.waitVisible(alice, "Working")
			h.stop()
			want := resumeNotice
			if volatile {
				want = interruptNotice
			}
			vis := h.tg.Visible(alice)
			if len(vis) != 1 || vis[0] != want {
				t.Fatalf("after stop: %q, want the status message to say %q", vis, want)
			}
			if !volatile {
				return
			}
			// The restart does not tell the chat a second time.
			h.q = queue.NewMemory(queue.Options{})
			h.run(func(c *Config) { c.VolatileQueue = true; c.State = st })
			h.tg.UserMessage(alice, alice, "/status")
			h.waitVisible(alice, "Idle")
			if n := strings.Count(strings.Join(h.tg.Visible(alice), "\n"), "send it again"); n != 1 {
				t.Errorf("told %d times: %q", n, h.tg.Visible(alice))
			}
		})
	}
}

// Issue 17 point 10: an edited message runs again and only the answer to
// the edited text stays; an edit while the first job still runs cancels
// it, and its result is not shown.
func TestEditedMessageReplacesItsAnswer(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	hold := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		if strings.Contains(l.Job.Goal, "slow") {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return queue.Result{Answer: "answer to " + l.Job.Goal}
	})
	_, msg := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "first try"})
	h.waitVisible(alice, "answer to first try")
	h.tg.EditMessage(alice, alice, msg, "second try")
	h.waitVisible(alice, "answer to second try")
	h.tg.Wait(t, wait, "old answer deleted", func(s *bottest.Server) bool { return !hasText(s.Visible(alice), "answer to first try") })

	_, slow := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "slow one"})
	h.waitVisible(alice, "Starting")
	h.tg.EditMessage(alice, alice, slow, "fast one")
	h.tg.Wait(t, wait, "the slow job canceled", func(*bottest.Server) bool {
		found := false
		h.bot.inspect(alice, func(c *chat) {
			for _, js := range c.jobs {
				found = found || js.superseded
			}
		})
		return found
	})
	close(hold) // the test worker runs one job at a time
	h.waitVisible(alice, "answer to fast one")
	h.tg.UserMessage(alice, alice, "/status")
	h.waitVisible(alice, "Idle")
	for _, v := range h.tg.Visible(alice) {
		if strings.Contains(v, "slow one") || strings.Contains(v, "Stopped") {
			t.Errorf("the superseded job shows: %q", h.tg.Visible(alice))
		}
	}
}

// /retry runs the user's last request again as a new job.
func TestRetryRunsTheLastRequestAgain(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	rec := recordJobs(t, q)
	h.tg.UserMessage(alice, alice, "/retry")
	h.waitVisible(alice, "Nothing to retry")
	h.tg.UserMessage(alice, alice, "count the files")
	h.tg.Wait(t, wait, "first job", func(*bottest.Server) bool { return len(rec.all()) == 1 })
	h.tg.UserMessage(alice, alice, "/retry")
	h.tg.Wait(t, wait, "retried job", func(*bottest.Server) bool { return len(rec.all()) == 2 })
	jobs := rec.all()
	if jobs[1].Goal != "count the files" || jobs[1].IdempotencyKey == jobs[0].IdempotencyKey || jobs[1].SessionID != jobs[0].SessionID {
		t.Errorf("retry: %+v after %+v", jobs[1], jobs[0])
	}
	if !strings.Contains(h.tg.Commands(), `"command":"retry"`) {
		t.Errorf("setMyCommands lacks retry: %s", h.tg.Commands())
	}
}

// /usage shows the last 7 days and the month besides today, from a
// history kept per chat (and in the state file).
func TestUsageHistory(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	q := queue.NewMemory(queue.Options{})
	st := &memState{}
	h := startBot(t, q, func(c *Config) { c.Now = clock; c.State = st })
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "done " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 1000, CompletionTokens: 500}}
	})
	h.tg.UserMessage(alice, alice, "day one")
	h.waitVisible(alice, "done day one")
	h.tg.UserMessage(alice, alice, "/usage") // usage is recorded after the reply is sent
	h.waitVisible(alice, "Today (UTC): 1,500 tokens")
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	h.tg.UserMessage(alice, alice, "day two")
	h.waitVisible(alice, "done day two")
	h.tg.UserMessage(alice, alice, "/usage")
	h.waitVisible(alice, "December 2026: 3,000 tokens, 2 job(s)")
	h.stop()
	h.run(func(c *Config) { c.Now = clock; c.State = st }) // the history survives a restart
	h.tg.UserMessage(alice, alice, "/usage")
	h.tg.Wait(t, wait, "/usage after the restart", func(s *bottest.Server) bool {
		return strings.Count(strings.Join(s.Visible(alice), "\n"), "December 2026: 3,000 tokens, 2 job(s)") == 2
	})
	for _, want := range []string{"Today (UTC): 1,500 tokens", "Last 7 days: 3,000 tokens, 2 job(s)", "2026-12-01: 1,500 tokens, 1 job(s)"} {
		if !hasText(h.tg.Visible(alice), want) {
			t.Errorf("/usage lacks %q: %q", want, h.tg.Visible(alice))
		}
	}
}

// Built-in texts follow the user's language_code: German for "de…",
// English otherwise.
func TestBuiltInTextsInTheUsersLanguage(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Status: queue.StatusFailed, Error: "kaputt"}
	})
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "/help", Lang: "de-AT"})
	h.waitVisible(alice, "Deine Telegram-Benutzer-ID: 1001")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Sticker: true, Lang: "de"})
	h.waitVisible(alice, "Sticker kann ich noch nicht annehmen.")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "mach was", Lang: "de"})
	h.waitVisible(alice, "❌ Der Auftrag ist fehlgeschlagen: kaputt.")
	h.tg.Send(bottest.Incoming{Chat: bob, User: bob, Text: "/stop", Lang: "en-GB"})
	h.waitVisible(bob, "Nothing to stop.")
}
