package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// carol is a named approver outside the allowlist.
const carol = int64(1003)

// askingWorker asks the job's question as a real worker does (with the
// job's user and session) and sends the answer on answers.
func askingWorker(t *testing.T, q *queue.Memory, question string, deadline time.Duration, answers chan<- string) {
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		a, err := q.Ask(ctx, queue.Approval{JobID: l.Job.ID, ChatID: l.Job.ChatID, UserID: l.Job.UserID, SessionID: l.Job.SessionID,
			Question: question, Deadline: time.Now().Add(deadline)})
		if err != nil {
			t.Error(err)
			return queue.Result{}
		}
		allow, ok, _ := q.AwaitAnswer(ctx, a.ID, deadline+time.Second)
		out := map[bool]string{true: "allowed", false: "denied"}[allow]
		if !ok {
			out = "expired"
		}
		answers <- out
		return queue.Result{Answer: "job says " + out}
	})
}

// Issue 26 point 6: the prompt goes to the asking chat and to each named
// approver's private chat; an approver answers from there (though not on
// the allowlist), every copy says the outcome; a member of the group who
// neither asked nor approves is refused with "not yours".
func TestApproverAnswersFromPrivateChat(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group}; c.Approvers = []int64{carol} })
	answers := make(chan string, 2)
	askingWorker(t, q, shellQuestion, time.Minute, answers)
	h.tg.UserMessage(group, alice, "@odek_test_bot build it")
	inGroup := h.keyboardMessage(group)
	dm := h.keyboardMessage(carol)
	if !strings.Contains(inGroup.Shown, "Only user1001 or an approver can answer") || !strings.Contains(dm.Shown, "in chat -500, asked by user1001") ||
		!strings.Contains(dm.Shown, "python3 build.py --fast") {
		t.Fatalf("prompts:\n%s\n---\n%s", inGroup.Shown, dm.Shown)
	}
	if len(dm.Keyboard) != 2 || len(dm.Keyboard[1]) != 1 || !strings.HasSuffix(dm.Keyboard[1][0], ":s") {
		t.Fatalf("approver's keyboard %v, want once/deny and allow-for-session", dm.Keyboard)
	}
	// bob is in the group but neither asked nor approves.
	h.tg.PressButton(group, bob, inGroup.ID, inGroup.Keyboard[0][0])
	// bob forges the press in his own private chat.
	h.tg.PressButton(bob, bob, inGroup.ID, inGroup.Keyboard[0][0])
	calls := h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) == 2 }, "answerCallbackQuery")
	for _, c := range calls {
		if c.Params.Get("show_alert") != "true" || !strings.Contains(c.Params.Get("text"), "Not yours") {
			t.Errorf("bob's press answered %v", c.Params)
		}
	}
	select {
	case a := <-answers:
		t.Fatalf("bob's press reached the worker: %s", a)
	default:
	}
	h.tg.PressButton(carol, carol, dm.ID, dm.Keyboard[0][0])
	if a := <-answers; a != "allowed" {
		t.Fatalf("worker got %s", a)
	}
	h.waitVisible(group, "job says allowed")
	for _, chat := range []int64{group, carol} {
		h.tg.Wait(t, wait, "every copy closed", func(s *bottest.Server) bool {
			for _, m := range s.Messages(chat) {
				if strings.Contains(m.Shown, "✅ Approved once by user1003") && len(m.Keyboard) == 0 {
					return true
				}
			}
			return false
		})
	}
}

// "Allow for this session" allows the question and records the grant for
// exactly this question in exactly the job's session; a question that does
// not pin the call down gets no such button.
func TestAllowForThisSession(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	answers := make(chan string, 2)
	askingWorker(t, q, shellQuestion, time.Minute, answers)
	h.tg.UserMessage(alice, alice, "build it")
	kb := h.keyboardMessage(alice)
	if len(kb.Keyboard) != 2 || !strings.HasSuffix(kb.Keyboard[1][0], ":s") {
		t.Fatalf("keyboard %v", kb.Keyboard)
	}
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[1][0])
	if a := <-answers; a != "allowed" {
		t.Fatalf("worker got %s", a)
	}
	h.waitVisible(alice, "♾ Allowed for this session by user1001")
	ctx := context.Background()
	if ok, _ := q.SessionGranted(ctx, "telegram:1001", shellQuestion); !ok {
		t.Fatal("no grant for the session")
	}
	if ok, _ := q.SessionGranted(ctx, "telegram:1001", strings.Replace(shellQuestion, "--fast", "--slow", 1)); ok {
		t.Fatal("the grant covers another command line")
	}
	if ok, _ := q.SessionGranted(ctx, "telegram:1002", shellQuestion); ok {
		t.Fatal("the grant covers another chat's session")
	}
}

func TestNoSessionButtonForClippedQuestion(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	answers := make(chan string, 2)
	clipped := "odek: allow shell (code_execution, argv0=python3, command=python3 " + strings.Repeat("x", 40) + "…)? [y/N] "
	askingWorker(t, q, clipped, time.Minute, answers)
	h.tg.UserMessage(alice, alice, "build it")
	kb := h.keyboardMessage(alice)
	if len(kb.Keyboard) != 1 {
		t.Fatalf("keyboard %v: a clipped question must not offer allow-for-session", kb.Keyboard)
	}
	// Forged session data is refused and does not answer.
	h.tg.PressButton(alice, alice, kb.ID, strings.TrimSuffix(kb.Keyboard[0][0], ":y")+":s")
	h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) == 1 }, "answerCallbackQuery")
	if ok, _ := q.SessionGranted(context.Background(), "telegram:1001", clipped); ok {
		t.Fatal("a clipped question was granted")
	}
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[0][1])
	if a := <-answers; a != "denied" {
		t.Fatalf("worker got %s", a)
	}
}

// A press after the bot restarted (a new Bot on the same queue, which
// never saw the prompt) still answers the job and closes every copy; the
// expiry closes the approver's copy too.
func TestApprovalPressAfterRestart(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Approvers = []int64{carol} })
	answers := make(chan string, 2)
	askingWorker(t, q, shellQuestion, time.Minute, answers)
	h.tg.UserMessage(alice, alice, "build it")
	kb := h.keyboardMessage(alice)
	h.keyboardMessage(carol)
	// Both prompts noted in the queue (the bot notes them once sent).
	h.tg.Wait(t, wait, "prompts noted", func(*bottest.Server) bool {
		as := h.bot.approvalStates()
		ps, _ := as.ApprovalPrompts(context.Background(), approvalIDOf(kb))
		return len(ps) == 2
	})
	h.stop()
	h.run(func(c *Config) { c.Approvers = []int64{carol} })
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[0][0])
	if a := <-answers; a != "allowed" {
		t.Fatalf("worker got %s", a)
	}
	defer func() {
		if t.Failed() {
			t.Log(h.logs.String())
		}
	}()
	for _, chat := range []int64{alice, carol} {
		h.tg.Wait(t, wait, "every copy closed", func(s *bottest.Server) bool {
			for _, m := range s.Messages(chat) {
				if strings.Contains(m.Shown, "✅ Approved once by user1001") && len(m.Keyboard) == 0 {
					return true
				}
			}
			return false
		})
	}
}

// approvalIDOf is the approval id in a prompt's buttons.
func approvalIDOf(m bottest.Message) string {
	id, _, _ := parseApprovalPress(m.Keyboard[0][0])
	return id
}

func TestApprovalExpiryClosesEveryCopy(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Approvers = []int64{carol} })
	answers := make(chan string, 2)
	askingWorker(t, q, shellQuestion, 300*time.Millisecond, answers)
	h.tg.UserMessage(alice, alice, "build it")
	h.keyboardMessage(carol)
	if a := <-answers; a != "expired" {
		t.Fatalf("worker got %s", a)
	}
	h.waitVisible(alice, "No answer in time — denied")
	h.waitVisible(carol, "No answer in time — denied")
}

func TestParseApprovalPress(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	for _, c := range []byte{choiceOnce, choiceDeny, choiceSession} {
		got, choice, ok := parseApprovalPress(approvalPressData(id, c))
		if !ok || got != id || choice != c {
			t.Errorf("round trip of %c: %q %c %v", c, got, choice, ok)
		}
	}
	for _, bad := range []string{"ap:" + id + ":x", "ap::s", "ap:a b:s", "ap:" + id + ":ss", "mo:1", "ap:" + strings.Repeat("a", 70) + ":s"} {
		if _, _, ok := parseApprovalPress(bad); ok {
			t.Errorf("parseApprovalPress(%q) accepted", bad)
		}
	}
}

func FuzzParseApprovalPress(f *testing.F) {
	for _, s := range []string{"ap:abc:s", "ap:abc:y", "ap:abc:n", "ap::s", "ap:abc:", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, choice, ok := parseApprovalPress(s)
		if ok && approvalPressData(id, choice) != s {
			t.Fatalf("%q parsed as %q %c, which renders differently", s, id, choice)
		}
	})
}

// A question that expires while the bot that showed it is gone: the bot
// running then closes every copy (the queue hands it the expired question).
func TestApprovalExpiryAfterRestartClosesPrompts(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Approvers = []int64{carol} })
	answers := make(chan string, 2)
	askingWorker(t, q, shellQuestion, 2*time.Second, answers)
	h.tg.UserMessage(alice, alice, "build it")
	kb := h.keyboardMessage(alice)
	h.keyboardMessage(carol)
	h.tg.Wait(t, wait, "prompts noted", func(*bottest.Server) bool {
		ps, _ := q.ApprovalPrompts(context.Background(), approvalIDOf(kb))
		return len(ps) == 2
	})
	h.stop()
	h.run(func(c *Config) { c.Approvers = []int64{carol} })
	if a := <-answers; a != "expired" {
		t.Fatalf("worker got %s", a)
	}
	h.waitVisible(alice, "No answer in time — denied")
	h.waitVisible(carol, "No answer in time — denied")
	for _, chat := range []int64{alice, carol} {
		for _, m := range h.tg.Messages(chat) {
			if len(m.Keyboard) > 0 {
				t.Errorf("a prompt kept its buttons after the expiry: %+v", m)
			}
		}
	}
}
