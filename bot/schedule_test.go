package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/schedule"
)

// lastMessage waits for a message of the bot in chatID containing sub and
// returns the newest such.
func (h *harness) lastMessage(chatID int64, sub string) bottest.Message {
	h.t.Helper()
	var got bottest.Message
	h.tg.Wait(h.t, wait, "a message containing "+sub, func(s *bottest.Server) bool {
		for _, m := range s.Messages(chatID) {
			if !m.Deleted && strings.Contains(m.Shown, sub) {
				got = m
			}
		}
		return got.ID != 0
	})
	return got
}

func schedBot(t *testing.T, q *queue.Memory) (*harness, *schedule.Service) {
	sv := &schedule.Service{Store: schedule.NewFile(""), Queue: q}
	h := startBot(t, q, func(c *Config) { c.Schedules = sv })
	return h, sv
}

// /remind and /tz: a reminder in the chat's zone, listed with buttons that
// pause, resume and delete it; the schedule fires as a job whose answer
// reaches the chat. Another chat neither sees nor touches it.
func TestRemindScheduleAndButtons(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h, sv := schedBot(t, q)
	ctx := context.Background()
	h.tg.UserMessage(alice, alice, "/tz Europe/Berlin")
	h.waitVisible(alice, "Time zone set to Europe/Berlin")
	h.tg.UserMessage(alice, alice, "/remind in 20m stretch your legs")
	h.waitVisible(alice, "✅ Reminder set (")
	list, err := sv.List(ctx, schedule.Owner{ChatID: alice})
	if err != nil || len(list) != 1 {
		t.Fatalf("schedules %v %v", list, err)
	}
	s := list[0]
	if s.Kind != schedule.KindMessage || s.Text != "stretch your legs" || s.TZ != "Europe/Berlin" || s.UserID != alice || !strings.HasPrefix(s.Spec, "at ") {
		t.Fatalf("reminder %+v", s)
	}
	if d := time.Until(s.Next); d < 19*time.Minute || d > 21*time.Minute {
		t.Fatalf("next fire in %s, want about 20m", d)
	}

	h.tg.UserMessage(alice, alice, "/schedule")
	lm := h.lastMessage(alice, "Schedules (times in Europe/Berlin)")
	if !strings.Contains(lm.Shown, s.ID) || !strings.Contains(lm.Shown, "stretch your legs") || len(lm.Keyboard) != 1 || lm.Keyboard[0][0] != "sc:p:"+s.ID {
		t.Fatalf("list %q %v", lm.Shown, lm.Keyboard)
	}
	h.tg.PressButton(alice, alice, lm.ID, lm.Keyboard[0][0])
	h.tg.Wait(t, wait, "the list edited to paused", func(bs *bottest.Server) bool {
		for _, m := range bs.Messages(alice) {
			if m.ID == lm.ID && strings.Contains(m.Shown, "paused") && len(m.Keyboard) == 1 && m.Keyboard[0][0] == "sc:r:"+s.ID {
				return true
			}
		}
		return false
	})
	if got, _ := sv.Store.Get(ctx, s.ID); got.Enabled {
		t.Fatal("the pause button did not pause")
	}

	// Bob's chat: sees nothing and cannot touch alice's schedule.
	h.tg.UserMessage(bob, bob, "/schedule")
	h.waitVisible(bob, "No schedules in this chat.")
	h.tg.UserMessage(bob, bob, "/schedule rm "+s.ID)
	h.waitVisible(bob, "No such schedule in this chat.")
	h.tg.UserMessage(bob, bob, "/jobs")
	h.waitVisible(bob, "Nothing running, queued or scheduled in this chat.")
	if _, err := sv.Store.Get(ctx, s.ID); err != nil {
		t.Fatalf("bob deleted alice's schedule: %v", err)
	}

	h.tg.UserMessage(alice, alice, "/schedule resume "+s.ID)
	h.waitVisible(alice, "▶️ Resumed "+s.ID)
	h.tg.UserMessage(alice, alice, "/jobs")
	h.waitVisible(alice, "• scheduled "+s.ID)

	// The fire: a runner at the fire time enqueues the job; its answer
	// (here the worker echoes the reminder) reaches alice.
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "⏰ " + l.Job.Goal, NoModel: true}
	})
	got, _ := sv.Store.Get(ctx, s.ID)
	r := &schedule.Runner{Store: sv.Store, Queue: q, Now: func() time.Time { return got.Next }}
	if n, err := r.Tick(ctx); n != 1 || err != nil {
		t.Fatalf("tick %d %v", n, err)
	}
	h.waitVisible(alice, "⏰ stretch your legs")
	// A reminder made no model call: it carries no usage line.
	for _, m := range h.tg.Visible(alice) {
		if strings.Contains(m, "⏰ stretch your legs") && strings.Contains(m, "tokens") {
			t.Errorf("the reminder shows a usage line: %q", m)
		}
	}

	h.tg.UserMessage(alice, alice, "/schedule rm "+s.ID)
	h.waitVisible(alice, "🗑 Deleted "+s.ID)
	if _, err := sv.Store.Get(ctx, s.ID); err == nil {
		t.Fatal("not deleted")
	}
}

// Errors name what is wrong; limits are told as such.
func TestScheduleCommandErrors(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	sv := &schedule.Service{Store: schedule.NewFile(""), Queue: q, Limits: schedule.Limits{MaxPerChat: 1}}
	h := startBot(t, q, func(c *Config) { c.Schedules = sv })
	for _, c := range []struct{ in, want string }{
		{"/remind", "Say when and what"},
		{"/remind sometime soon", "not understood"},
		{"/remind in 20m", "needs a text after the time"},
		{"/remind every 1h drink water", "/remind is for one reminder"},
		{"/schedule add every 10s ping", "more often than the minimum interval of 1m0s"},
		{"/schedule add weekdays 8:00 summarise the open issues", "✅ Scheduled ("},
		{"/schedule add daily 9:00 news", "the most allowed"},
		{"/schedule frobnicate", "Unknown /schedule subcommand"},
		{"/schedule pause", "Say which schedule"},
		{"/tz Mars/Base", "unknown time zone"},
		{"/stop nope", "No such job in this chat"},
	} {
		h.tg.UserMessage(alice, alice, c.in)
		h.waitVisible(alice, c.want)
	}
}

// Schedules off: the commands say so instead of failing.
func TestScheduleCommandsOff(t *testing.T) {
	h := startBot(t, nil, nil)
	h.tg.UserMessage(alice, alice, "/schedule")
	h.waitVisible(alice, "Schedules are off on this bot")
}

// /bg answers at once with the job's id, runs with its own session in a
// queue lane of its own — beside a foreground job that is still running —
// and its answer replies to the asking message; /jobs lists it meanwhile
// and /stop <id> stops one job of this chat only. A silent result (a
// quiet check-in with nothing to report) shows nothing.
func TestBackgroundJobsAndSilentResults(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h, _ := schedBot(t, q)
	releaseFg, releaseBg := make(chan struct{}), make(chan struct{})
	sessions := make(chan string, 8)
	run := func(ctx context.Context, l queue.Lease) queue.Result {
		sessions <- l.Job.SessionID
		wait := map[string]chan struct{}{"foreground work": releaseFg, "slow": releaseBg}[l.Job.Goal]
		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
			}
		}
		if l.Job.Goal == "quiet" {
			return queue.Result{Silent: true}
		}
		return queue.Result{Answer: "done: " + l.Job.Goal}
	}
	worker(t, q, run)
	worker(t, q, run) // two workers: the background job must not need the first
	h.tg.UserMessage(alice, alice, "foreground work")
	if s := <-sessions; strings.Contains(s, ":bg:") {
		t.Fatalf("foreground session %q", s)
	}
	_, fastID := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "/bg fast"})
	ans := h.lastMessage(alice, "done: fast") // while the foreground job still runs
	if ans.ReplyTo != fastID {
		t.Fatalf("the background answer replies to %d, want %d", ans.ReplyTo, fastID)
	}
	if s := <-sessions; !strings.Contains(s, ":bg:") {
		t.Fatalf("background job session %q", s)
	}
	close(releaseFg)
	h.waitVisible(alice, "done: foreground work")

	_, msgID := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "/bg slow"})
	var ack bottest.Message
	h.tg.Wait(t, wait, "the /bg acknowledgement as a reply", func(bs *bottest.Server) bool {
		for _, m := range bs.Messages(alice) {
			if strings.HasPrefix(m.Shown, "🧵 Background job ") && m.ReplyTo == msgID {
				ack = m
				return true
			}
		}
		return false
	})
	id := strings.Fields(strings.TrimPrefix(ack.Shown, "🧵 Background job "))[0]
	h.tg.UserMessage(alice, alice, "/jobs")
	h.waitVisible(alice, "• background "+id+" — slow")
	h.tg.UserMessage(bob, bob, "/stop "+id)
	h.waitVisible(bob, "No such job in this chat")
	close(releaseBg)
	if ans := h.lastMessage(alice, "done: slow"); ans.ReplyTo != msgID {
		t.Fatalf("the background answer replies to %d, want %d", ans.ReplyTo, msgID)
	}

	// A silent result, then a loud one of the same chat: only the loud one shows.
	if _, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: alice, Goal: "quiet"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue(context.Background(), queue.Job{ChatID: alice, Goal: "loud"}); err != nil {
		t.Fatal(err)
	}
	h.waitVisible(alice, "done: loud")
	for _, m := range h.tg.Visible(alice) {
		if strings.Contains(m, "quiet") || strings.Contains(m, "no answer") || strings.Contains(m, "(empty") {
			t.Fatalf("the silent result showed: %q", m)
		}
	}
}

// FuzzParseScheduleData: callback data is untrusted; whatever parses
// names a known operation and an id of the schedule package's alphabet,
// and writing it back gives the same data.
func FuzzParseScheduleData(f *testing.F) {
	for _, s := range []string{"sc:p:0123456789abcdef", "sc:d:x", "sc:n:", "sc:zz", "sc:r:AB", "ap:1:y", "sc:p:" + strings.Repeat("a", 33), "sc:p:a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		op, id, ok := parseScheduleData(data)
		if !ok {
			return
		}
		code := map[string]byte{"pause": 'p', "resume": 'r', "rm": 'd', "run": 'n'}[op]
		if code == 0 || id == "" || len(id) > 32 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Fatalf("%q parsed to %q %q", data, op, id)
		}
		if scheduleData(code, id) != data {
			t.Fatalf("%q does not round-trip", data)
		}
	})
}
