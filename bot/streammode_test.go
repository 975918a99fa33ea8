package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// toolEvent is an odek.event/v1 line of a tool call.
func toolEvent(typ, tool, argv0 string) string {
	args := ""
	if argv0 != "" {
		args = `,"data":{"args_summary":{"argv0":"` + argv0 + `"}}`
	}
	return `{"schema":"odek.event/v1","type":"` + typ + `","tool":"` + tool + `","iteration":1` + args + `}`
}

// Issue 26 point 7, /stream progress: the status message lists the
// finished tool calls under the status line, no answer text is streamed
// (no draft), and the answer comes as a new message.
func TestStreamProgressShowsToolLinesAndNoDraft(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.StatusDelay = -1 })
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Iteration: 1})
		event(t, q, l.Job.ID, toolEvent("tool_call_started", "shell", "go"))
		event(t, q, l.Job.ID, toolEvent("tool_call_completed", "shell", ""))
		event(t, q, l.Job.ID, toolEvent("tool_call_started", "read_file", ""))
		delta(t, q, l.Job.ID, 2, 0, "The build is green")
		select {
		case <-release:
		case <-ctx.Done():
		}
		return queue.Result{Answer: "The build is **green**."}
	})
	h.tg.UserMessage(alice, alice, "/stream progress")
	h.waitVisible(alice, "the steps and tool calls")
	h.tg.UserMessage(alice, alice, "is the build green?")
	h.tg.Wait(t, wait, "the tool line", func(s *bottest.Server) bool {
		for _, m := range s.Messages(alice) {
			if strings.HasPrefix(m.Shown, "⏳ Working") && strings.Contains(m.Shown, "🔧 read_file") && strings.HasSuffix(m.Shown, "\n✓ shell: go") {
				return true
			}
		}
		return false
	})
	close(release)
	h.waitVisible(alice, "The build is green.")
	if d := h.tg.Drafts(alice); len(d) != 0 {
		t.Errorf("drafts %+v in progress mode", d)
	}
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Shown, "⏳") && !m.Deleted {
			t.Errorf("status left: %+v", m)
		}
		if strings.HasPrefix(m.Shown, "⏳") && strings.Contains(m.Shown, "The build is green") {
			t.Errorf("answer text streamed into the status in progress mode: %q", m.Shown)
		}
	}
	h.tg.UserMessage(alice, alice, "/stream")
	h.waitVisible(alice, "this chat shows: the steps and tool calls")
	h.tg.UserMessage(alice, alice, "/stream loud")
	h.waitVisible(alice, `Unknown choice "loud"`)
}

// /stream off: no draft and no answer text in the status message; the
// choice is kept per chat (another chat still streams).
func TestStreamOffIsPerChat(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.StatusDelay = -1 })
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Iteration: 1})
		delta(t, q, l.Job.ID, 1, 0, "Partial words")
		// Until the bot has read the delta: bob's chat drafts it, alice's
		// status message shows the step read with it.
		h.tg.Wait(t, wait, "the delta read", func(s *bottest.Server) bool {
			if l.Job.ChatID == bob {
				return len(s.Drafts(bob)) > 0
			}
			for _, m := range s.Messages(alice) {
				if strings.HasPrefix(m.Shown, "⏳ Working · step 1") {
					return true
				}
			}
			return false
		})
		return queue.Result{Answer: "done " + l.Job.Goal}
	})
	h.tg.UserMessage(alice, alice, "/stream off")
	h.waitVisible(alice, "a short status line only")
	h.tg.UserMessage(alice, alice, "one")
	h.waitVisible(alice, "done one")
	h.tg.UserMessage(bob, bob, "two")
	h.waitVisible(bob, "done two")
	if d := h.tg.Drafts(alice); len(d) != 0 {
		t.Errorf("alice (off) got drafts %+v", d)
	}
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Shown, "Partial words") {
			t.Errorf("answer text shown with /stream off: %+v", m)
		}
	}
	if d := h.tg.Drafts(bob); len(d) == 0 {
		t.Error("bob (operator default partial) got no draft")
	}
}

// A draft never shrinks or jumps back through the bot: the text of a
// second model call (after a tool call) is added after the first's, and
// every draft sent begins with the one before.
func TestDraftsOnlyGrowAcrossModelCalls(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	step := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Iteration: 1})
		delta(t, q, l.Job.ID, 1, 0, "Let me look at the files.")
		select {
		case <-step:
		case <-ctx.Done():
		}
		event(t, q, l.Job.ID, toolEvent("tool_call_started", "shell", "ls"))
		delta(t, q, l.Job.ID, 2, 0, "There are")
		select {
		case <-step:
		case <-ctx.Done():
		}
		delta(t, q, l.Job.ID, 2, len("There are"), " three.")
		select {
		case <-step:
		case <-ctx.Done():
		}
		return queue.Result{Answer: "There are three."}
	})
	h.tg.UserMessage(alice, alice, "how many files?")
	want := []string{"Let me look at the files.", "Let me look at the files.\n\nThere are", "Let me look at the files.\n\nThere are three."}
	for i, w := range want {
		h.tg.Wait(t, wait, "draft "+w, func(s *bottest.Server) bool {
			d := s.Drafts(alice)
			return len(d) > 0 && d[len(d)-1].Text == w
		})
		if i < len(want) {
			step <- struct{}{}
		}
	}
	h.waitVisible(alice, "There are three.")
	ds := h.tg.Drafts(alice)
	for i := 1; i < len(ds); i++ {
		if !strings.HasPrefix(ds[i].Text, ds[i-1].Text) || len(ds[i].Text) <= len(ds[i-1].Text) {
			t.Errorf("draft %d %q after %q: shrank or jumped back", i, ds[i].Text, ds[i-1].Text)
		}
	}
}

// The first draft goes out as soon as the model's first text is in the
// progress stream, not at the next progress read: with the progress
// interval an hour long, the draft still comes (and no status message).
func TestFirstDraftDoesNotWaitForAProgressRead(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.ProgressInterval = time.Hour })
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		time.Sleep(50 * time.Millisecond) // the job exists in the chat before its text does
		delta(t, q, l.Job.ID, 1, 0, "First words")
		select {
		case <-release:
		case <-ctx.Done():
		}
		return queue.Result{Answer: "First words and more."}
	})
	h.tg.UserMessage(alice, alice, "write")
	h.tg.Wait(t, wait, "the first draft", func(s *bottest.Server) bool {
		d := s.Drafts(alice)
		return len(d) == 1 && d[0].Text == "First words"
	})
	close(release)
	h.waitVisible(alice, "First words and more.")
}

// The acknowledging reaction: the asking message gets 👀 when its job is
// created (a reaction Telegram allows); "off" sets none; an emoji
// Telegram does not allow is refused at start-up naming the setting.
func TestAckReaction(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result { return queue.Result{Answer: "ok " + l.Job.Goal} })
	_, msg := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "hello"})
	h.waitVisible(alice, "ok hello")
	if r := h.tg.Reactions(alice); len(r) != 1 || r[0].MessageID != msg || r[0].Emoji != "👀" {
		t.Errorf("reactions %+v, want 👀 on message %d", r, msg)
	}
	h.tg.UserMessage(alice, alice, "/status")
	h.waitVisible(alice, "Idle")
	if r := h.tg.Reactions(alice); len(r) != 1 {
		t.Errorf("a command got a reaction: %+v", r)
	}

	q2 := queue.NewMemory(queue.Options{})
	h2 := startBot(t, q2, func(c *Config) { c.AckReaction = "off" })
	worker(t, q2, func(ctx context.Context, l queue.Lease) queue.Result { return queue.Result{Answer: "ok " + l.Job.Goal} })
	h2.tg.UserMessage(alice, alice, "hello")
	h2.waitVisible(alice, "ok hello")
	if r := h2.tg.Reactions(alice); len(r) != 0 {
		t.Errorf("reactions %+v with AckReaction off", r)
	}
	if _, err := New(Config{Token: bottest.Token, AllowAll: true, AckReaction: "🦖"}, q); err == nil || !strings.Contains(err.Error(), "ODEK_TELEGRAM_ACK_REACTION") {
		t.Errorf("AckReaction 🦖: %v", err)
	}
	if _, err := New(Config{Token: bottest.Token, AllowAll: true, Stream: "loud"}, q); err == nil || !strings.Contains(err.Error(), "ODEK_TELEGRAM_STREAM") {
		t.Errorf("Stream loud: %v", err)
	}
}

// The fake refuses what Telegram refuses: an emoji outside the list, two
// reactions, an unknown message.
func TestFakeSetMessageReactionIsStrict(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	_, msg := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "/status"})
	h.waitVisible(alice, "Idle")
	ctx := context.Background()
	for _, c := range []struct {
		msg   int
		emoji string
		want  string
	}{{msg, "🦖", "REACTION_INVALID"}, {msg + 1000, "👀", "message to react not found"}} {
		if _, err := h.bot.tg.SetReaction(ctx, alice, c.msg, c.emoji); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetReaction(%d, %s): %v, want %s", c.msg, c.emoji, err, c.want)
		}
	}
	if _, err := h.bot.tg.SetReaction(ctx, alice, msg, "👍"); err != nil {
		t.Errorf("allowed reaction refused: %v", err)
	}
}

// After a provider error the chat gets one readable notice instead of the
// raw error; the next provider errors within the cooldown send nothing
// new: the notice counts them and the asking message is marked.
func TestProviderErrorsFoldIntoOneNotice(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Status: queue.StatusFailed, Error: "agent: model call: llm: retries exhausted after 3 attempt(s): llm: HTTP 503: upstream overloaded"}
	})
	h.tg.UserMessage(alice, alice, "one")
	h.waitVisible(alice, "The model provider is not answering right now")
	_, second := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "two"})
	h.waitVisible(alice, "2 requests failed this way since")
	h.tg.UserMessage(alice, alice, "three")
	h.waitVisible(alice, "3 requests failed this way since")
	var notices int
	for _, v := range h.tg.Visible(alice) {
		if strings.Contains(v, "llm:") || strings.Contains(v, "HTTP 503") {
			t.Errorf("raw provider error shown: %q", v)
		}
		if strings.Contains(v, "model provider") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d notices visible, want 1: %q", notices, h.tg.Visible(alice))
	}
	marked := false
	for _, r := range h.tg.Reactions(alice) {
		marked = marked || (r.MessageID == second && r.Emoji == foldedReaction)
	}
	if !marked {
		t.Errorf("the folded request %d is not marked: %+v", second, h.tg.Reactions(alice))
	}
}
