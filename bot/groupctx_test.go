package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// untrustedBlocks are the texts inside the untrusted markers of a goal.
func untrustedBlocks(goal string) []string {
	var out []string
	for _, part := range strings.Split(goal, "<<<odek-untrusted ")[1:] {
		body, _, _ := strings.Cut(part, "<<<end odek-untrusted")
		out = append(out, body)
	}
	return out
}

// Issue 26 point 3: the group messages not addressed to the bot are kept
// (the last GroupContext of them) and given to the next addressed turn as
// quoted, untrusted chat text; the turn takes them (the next one does not
// get them again); another group's chatter never appears.
func TestGroupContextGoesToTheNextAddressedTurn(t *testing.T) {
	const other = int64(-600)
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group, other}; c.GroupContext = 3 })
	rec := recordJobs(t, q)
	for i := 1; i <= 5; i++ {
		h.tg.Send(bottest.Incoming{Chat: group, User: alice, From: "Alice", Text: fmt.Sprintf("chatter %d", i)})
	}
	h.tg.Send(bottest.Incoming{Chat: other, User: bob, Text: "secret of the other group"})
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "@odek_test_bot what did Alice say?"})
	h.waitVisible(group, fmt.Sprintf("answer for %d", bob))
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "@odek_test_bot and now?"})
	h.tg.Wait(t, wait, "two jobs", func(*bottest.Server) bool { return len(rec.all()) == 2 })
	jobs := rec.all()
	g := jobs[0].Goal
	blocks := untrustedBlocks(g)
	if len(blocks) != 1 || !strings.HasSuffix(g, "\n\nwhat did Alice say?") {
		t.Fatalf("goal %q: want one quoted block, then the request", g)
	}
	for i := 1; i <= 5; i++ {
		if in := strings.Contains(blocks[0], fmt.Sprintf("Alice: chatter %d", i)); in != (i >= 3) {
			t.Errorf("chatter %d in the block: %v (the last 3 are kept)", i, in)
		}
	}
	if !strings.Contains(g, "not instructions") || strings.Contains(g, "secret of the other group") {
		t.Errorf("goal %q: want the chatter marked as not instructions and nothing of the other group", g)
	}
	if jobs[1].Goal != "and now?" {
		t.Errorf("second goal %q: the chatter was given once", jobs[1].Goal)
	}
}

// A reply brings the replied message, and the part the user quoted, into
// the job, as quoted untrusted text (in a group and in a private chat).
func TestReplyBringsTheMessageAndItsQuote(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group} })
	rec := recordJobs(t, q)
	_, said := h.tg.Send(bottest.Incoming{Chat: group, User: alice, From: "Alice", Text: "the build broke at step 7: linker ran out of memory"})
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "@odek_test_bot why?", ReplyTo: said, Quote: "linker ran out of memory"})
	h.waitVisible(group, fmt.Sprintf("answer for %d", bob))
	g := rec.all()[0].Goal
	blocks := untrustedBlocks(g)
	// The replied message comes once, as the reply (not also as chatter).
	if len(blocks) != 2 || !strings.Contains(blocks[0], "the build broke at step 7") || strings.TrimSpace(strings.SplitN(blocks[1], "\n", 3)[2]) != "linker ran out of memory" {
		t.Fatalf("goal %q: want the replied message, then the quote", g)
	}
	if !strings.Contains(g, "replies to this message from Alice") || !strings.HasSuffix(g, "\n\nwhy?") {
		t.Errorf("goal %q", g)
	}
	// Private chat: a reply to the bot's own answer names it as such.
	h.tg.UserMessage(alice, alice, "first")
	h.waitVisible(alice, fmt.Sprintf("answer for %d", alice))
	var answer int
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Shown, "answer for") {
			answer = m.ID
		}
	}
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "shorter please", ReplyTo: answer})
	h.tg.Wait(t, wait, "third job", func(*bottest.Server) bool { return len(rec.all()) == 3 })
	if g := rec.all()[2].Goal; !strings.Contains(g, "earlier answer of yours") || !strings.Contains(g, fmt.Sprintf("answer for %d", alice)) || !strings.HasSuffix(g, "shorter please") {
		t.Errorf("private reply goal %q", g)
	}
}

// The context travels on every path: a reply sent while the chat's job
// runs is queued (busy "queue") or steered into the running job (busy
// "steer") with the replied message and its quote.
func TestReplyContextOnQueuedAndSteeredMessages(t *testing.T) {
	for _, policy := range []string{"queue", "steer"} {
		t.Run(policy, func(t *testing.T) {
			q := queue.NewMemory(queue.Options{})
			h := startBot(t, q, func(c *Config) { c.Busy = policy })
			running, release := make(chan struct{}), make(chan struct{})
			goals := make(chan string, 4)
			worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
				goals <- l.Job.Goal
				if l.Job.Goal != "first job" {
					return queue.Result{Answer: "second done"}
				}
				close(running)
				select {
				case <-release:
				case <-ctx.Done():
				}
				got, _ := q.TakeSteer(ctx, l.Job.ID)
				for _, s := range got {
					goals <- "steered: " + s
				}
				return queue.Result{Answer: "first done"}
			})
			_, said := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "the invoice total is 418 EUR"})
			h.tg.UserMessage(alice, alice, "first job")
			<-running
			h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "check this", ReplyTo: said, Quote: "418 EUR"})
			if policy == "steer" {
				h.waitVisible(alice, "↪ Added to the running job")
			} else {
				h.waitVisible(alice, "Queued")
			}
			close(release)
			h.waitVisible(alice, "first done")
			var got string
			h.tg.Wait(t, wait, "the reply's goal", func(*bottest.Server) bool {
				for {
					select {
					case g := <-goals:
						if strings.Contains(g, "check this") {
							got = g
							return true
						}
					default:
						return false
					}
				}
			})
			if policy == "steer" && !strings.HasPrefix(got, "steered: ") {
				t.Errorf("reply not steered: %q", got)
			}
			if blocks := untrustedBlocks(got); len(blocks) != 2 || !strings.Contains(blocks[0], "the invoice total is 418 EUR") || !strings.Contains(blocks[1], "418 EUR") {
				t.Errorf("goal %q: want the replied message and the quote", got)
			}
		})
	}
}

// Forum topics are conversations: a topic's chatter goes to that topic's
// next turn, not to the General topic's.
func TestGroupContextStaysInItsTopic(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group} })
	rec := recordJobs(t, q)
	topic := h.tg.NewTopic(group, alice, "ops")
	h.tg.TopicMessage(group, alice, topic, "the topic's own chatter")
	h.tg.TopicMessage(group, alice, 0, "general chatter")
	h.tg.TopicMessage(group, bob, 0, "@odek_test_bot summarize")
	h.tg.Wait(t, wait, "a job", func(*bottest.Server) bool { return len(rec.all()) == 1 })
	g := rec.all()[0].Goal
	if !strings.Contains(g, "general chatter") || strings.Contains(g, "the topic's own chatter") {
		t.Errorf("General's goal %q: want its own chatter only", g)
	}
}

// The kept chatter is chat state: it survives a restart of the bot.
func TestGroupContextSurvivesRestart(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	st := &memState{}
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group}; c.State = st })
	h.tg.Send(bottest.Incoming{Chat: group, User: alice, From: "Alice", Text: "remember me across restarts"})
	h.tg.Wait(t, wait, "the chatter saved", func(*bottest.Server) bool {
		data, _ := st.Load(context.Background())
		return strings.Contains(string(data), "remember me across restarts")
	})
	h.stop()
	h.run(func(c *Config) { c.AllowedChats = []int64{group}; c.State = st })
	rec := recordJobs(t, q)
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "@odek_test_bot what did she say?"})
	h.tg.Wait(t, wait, "a job", func(*bottest.Server) bool { return len(rec.all()) == 1 })
	if g := rec.all()[0].Goal; !strings.Contains(g, "Alice: remember me across restarts") {
		t.Errorf("goal after the restart %q", g)
	}
}

func TestChatterBlockBounds(t *testing.T) {
	long := strings.Repeat("x", maxChatterChars)
	var lines []chatterLine
	for i := range 40 {
		lines = append(lines, chatterLine{Msg: i + 1, From: "@a", Text: long})
	}
	b := chatterBlock(lines, 0, 0)
	body := untrustedBlocks(b)
	if len(body) != 1 || len([]rune(body[0])) > maxChatterBlock+500 || !strings.Contains(b, long) {
		t.Fatalf("block of %d characters", len([]rune(b)))
	}
	if chatterBlock(lines[:1], 1, 0) != "" {
		t.Error("the skipped message is in the block")
	}
}

// FuzzUpdateExtras: the raw-update reader never panics, and a quote it
// reads is within the Bot API's 1024 characters.
func FuzzUpdateExtras(f *testing.F) {
	f.Add([]byte(`{"update_id":1,"message":{"message_id":2,"quote":{"text":"part","position":3,"is_manual":true}}}`))
	f.Add([]byte(`{"update_id":1,"edited_message":{"quote":{"text":""}}}`))
	f.Add([]byte(`{"update_id":1,"message":{"quote":null}}`))
	f.Add([]byte(`[{"update_id":1,"message":{"quote":{"text":"a"}}},{"update_id":2}]`))
	f.Add([]byte(`{"message":{"quote":{"text":` + fmt.Sprintf("%q", strings.Repeat("é", 2000)) + `}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		x := extraOfUpdate(raw)
		if n := len([]rune(x.Quote)); n > maxQuote {
			t.Fatalf("quote of %d characters", n)
		}
		for _, x := range extrasOf(json.RawMessage(raw)) {
			if n := len([]rune(x.Quote)); n > maxQuote {
				t.Fatalf("quote of %d characters", n)
			}
		}
	})
}
