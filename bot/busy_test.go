package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/speech"
	"github.com/odekrun/odek/queue"
)

// Issue 26: a voice note sent while the chat's job runs follows the busy
// policy after it is transcribed: with "steer" its transcript joins the
// running job (the worker takes it from the job's inbox) and the chat gets
// the receipt; no second job starts.
func TestVoiceNoteIsSteeredAfterTranscription(t *testing.T) {
	stt := bottest.NewTranscriber(t)
	stt.Say("and the hidden files too")
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.Busy = "steer"
		c.Transcriber = &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key, Model: "whisper-1"}
	})
	running := make(chan struct{})
	steered := make(chan struct{})
	jobs := make(chan string, 4)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		jobs <- l.Job.Goal
		if l.Job.Goal != "list the files" {
			return queue.Result{Answer: "a second job ran"}
		}
		close(running)
		<-steered
		got, err := q.TakeSteer(ctx, l.Job.ID) // the model boundary
		if err != nil {
			t.Error(err)
		}
		return queue.Result{Answer: "covered: " + strings.Join(got, " | ")}
	})
	h.tg.UserMessage(alice, alice, "list the files")
	<-running
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}})
	h.waitVisible(alice, "↪ Added to the running job")
	close(steered)
	h.waitVisible(alice, "covered: and the hidden files too")
	if len(jobs) != 1 {
		t.Fatalf("%d jobs ran, want 1", len(jobs))
	}
}

// A message steered into a job that ends before its worker took it is not
// lost: the bot takes it back after the result and runs it as a job of its
// own.
func TestSteeredMessageTheJobNeverTookRunsAfterIt(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Busy = "steer" })
	running := make(chan struct{})
	steered := make(chan struct{})
	goals := make(chan string, 4)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		goals <- l.Job.Goal
		if l.Job.Goal == "first" {
			close(running)
			<-steered // ends without looking at its inbox
			return queue.Result{Answer: "answer to first"}
		}
		return queue.Result{Answer: "answer to " + l.Job.Goal}
	})
	h.tg.UserMessage(alice, alice, "first")
	<-running
	h.tg.UserMessage(alice, alice, "second")
	h.waitVisible(alice, "↪ Added to the running job")
	close(steered)
	h.waitVisible(alice, "answer to second")
	if g := []string{<-goals, <-goals}; g[1] != "second" {
		t.Fatalf("jobs %q, want the untaken steered message as the second job", g)
	}
}

// /busy shows and sets the chat's policy; an unknown word is refused and
// names the choices; the choice survives in the state snapshot.
func TestBusyCommand(t *testing.T) {
	h := startBot(t, nil, nil)
	h.tg.UserMessage(alice, alice, "/busy")
	h.waitVisible(alice, "While a job runs, new messages are: queued as their own jobs.")
	h.tg.UserMessage(alice, alice, "/busy drop")
	h.waitVisible(alice, `Unknown choice "drop": use /busy queue, /busy steer or /busy interrupt.`)
	h.tg.UserMessage(alice, alice, "/busy steer")
	h.waitVisible(alice, "From now on, messages sent while a job runs are steered into the running job.")
	h.tg.UserMessage(alice, alice, "/busy")
	h.waitVisible(alice, "While a job runs, new messages are: steered into the running job.")
	if _, err := New(Config{Token: "x", AllowAll: true, Busy: "later"}, queue.NewMemory(queue.Options{})); err == nil || !strings.Contains(err.Error(), "ODEK_TELEGRAM_BUSY") {
		t.Fatalf("New with Busy %q: %v; want an error naming ODEK_TELEGRAM_BUSY", "later", err)
	}
}

// Issue 26 point 8: "typing…" shows as soon as the job works, before its
// (delayed) first status message, not only once a status message exists.
func TestTypingShowsBeforeTheFirstStatusMessage(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.StatusDelay = time.Hour })
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Attempt: 1})
		<-release
		return queue.Result{Answer: "done"}
	})
	h.tg.UserMessage(alice, alice, "work")
	h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) > 0 }, "sendChatAction")
	if n := len(h.tg.Messages(alice)); n != 0 {
		t.Errorf("%d messages before typing; want typing first (the status is delayed)", n)
	}
	close(release)
	h.waitVisible(alice, "done")
}
