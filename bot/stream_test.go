package bot

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// delta publishes a piece of a job's streamed answer as a worker does.
func delta(t *testing.T, q *queue.Memory, jobID string, call, offset int, text string) {
	t.Helper()
	b, _ := json.Marshal(queue.AnswerDelta{Schema: queue.DeltaSchema, JobID: jobID, Call: call, Offset: offset, Text: text})
	if err := q.PublishProgress(context.Background(), jobID, b); err != nil {
		t.Fatal(err)
	}
}

// streamingWorker streams "The answer is" then " forty-two." and, once
// released, returns the whole answer in Markdown.
func streamingWorker(t *testing.T, q *queue.Memory, h *harness, chat int64, seen func() bool) {
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Iteration: 1})
		delta(t, q, l.Job.ID, 1, 0, "The answer is")
		delta(t, q, l.Job.ID, 1, len("The answer is"), " **forty-two**.")
		select {
		case <-release:
		case <-ctx.Done():
		}
		return queue.Result{Answer: "The answer is **forty-two**."}
	})
	h.tg.Wait(t, wait, "the streamed text shown", func(*bottest.Server) bool { return seen() })
	close(release)
}

// Issue 17, streaming answers: in a private chat the answer appears as it
// is written with sendMessageDraft (one draft id per job), then the
// formatted answer replaces it with sendMessage.
func TestAnswerStreamsAsDraft(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	h.tg.UserMessage(alice, alice, "what is the answer?")
	streamingWorker(t, q, h, alice, func() bool {
		d := h.tg.Drafts(alice)
		return len(d) > 0 && d[len(d)-1].Text == "The answer is **forty-two**."
	})
	h.waitVisible(alice, "The answer is forty-two.")
	ds := h.tg.Drafts(alice)
	for _, d := range ds {
		if d.DraftID != ds[0].DraftID || d.DraftID <= 0 {
			t.Errorf("draft ids %+v: want one positive id per job", ds)
		}
	}
	var final bottest.Message
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Shown, "forty-two") {
			final = m
		}
	}
	if final.ParseMode != "HTML" || !strings.Contains(final.Text, "<b>forty-two</b>") {
		t.Errorf("final message %+v, want the formatted answer", final)
	}
	for _, m := range h.tg.Messages(alice) {
		if strings.HasPrefix(m.Shown, "⏳") && !m.Deleted {
			t.Errorf("status left: %+v", m)
		}
	}
}

// Where the Bot API has no sendMessageDraft (404 "method not found") the
// answer streams in the status message by throttled edits, then the
// formatted answer replaces it; the bot stops trying drafts.
func TestAnswerStreamsByEditsWithoutDrafts(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	h.tg.NoDrafts()
	h.tg.UserMessage(alice, alice, "what is the answer?")
	streamingWorker(t, q, h, alice, func() bool {
		for _, m := range h.tg.Messages(alice) {
			if strings.HasPrefix(m.Shown, "⏳ Working") && strings.HasSuffix(m.Shown, "\n\nThe answer is **forty-two**.") {
				return true
			}
		}
		return false
	})
	h.waitVisible(alice, "The answer is forty-two.")
	if !h.bot.noDrafts.Load() {
		t.Error("the bot still tries drafts after 'method not found'")
	}
	if n := len(h.tg.Calls("sendMessageDraft")); n != 1 {
		t.Errorf("sendMessageDraft tried %d times, want once", n)
	}
	if v := h.tg.Visible(alice); len(v) != 1 {
		t.Errorf("visible %q: want the answer alone (status replaced)", v)
	}
}

// In a group (no drafts: they are for private chats) the answer streams
// by edits of the status message, which replies to the asking message.
func TestAnswerStreamsByEditsInGroups(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group} })
	h.tg.Send(bottest.Incoming{Chat: group, User: alice, Text: "@" + bottest.BotUsername + " what is the answer?"})
	streamingWorker(t, q, h, group, func() bool {
		for _, m := range h.tg.Messages(group) {
			if strings.Contains(m.Shown, "\n\nThe answer is **forty-two**.") {
				return true
			}
		}
		return false
	})
	h.waitVisible(group, "The answer is forty-two.")
	if n := len(h.tg.Calls("sendMessageDraft")); n != 0 {
		t.Errorf("sendMessageDraft called %d times in a group", n)
	}
}

// The first draft does not wait for the status message (issue 26 point 8:
// drafts went out only with status edits, about 3.4 s after the model
// started writing): with the status message held back for a minute, the
// streamed answer still shows as a draft, before any status message.
func TestDraftDoesNotWaitForTheStatusMessage(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.StatusDelay = time.Minute })
	h.tg.UserMessage(alice, alice, "what is the answer?")
	streamingWorker(t, q, h, alice, func() bool {
		d := h.tg.Drafts(alice)
		return len(d) > 0 && strings.HasPrefix(d[len(d)-1].Text, "The answer is")
	})
	h.waitVisible(alice, "The answer is forty-two.")
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Text, "Working") {
			t.Errorf("a status message was sent although its delay had not passed: %+v", m)
		}
	}
}
