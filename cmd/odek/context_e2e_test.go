package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/session"
)

// digestModel is a scripted model for long chats: it answers the digest
// side call (agent.DigestPrompt) with every line of the previous digest
// and the folded turns that carries "FACT", and any other request with an
// answer padded to pad bytes. It counts side calls.
type digestModel struct {
	pad int

	mu        sync.Mutex
	sideCalls int
}

func (d *digestModel) handle(r llmtest.Recorded) llmtest.Turn {
	if len(r.Messages) > 0 && r.Messages[0].Content == agent.DigestPrompt {
		d.mu.Lock()
		d.sideCalls++
		d.mu.Unlock()
		var facts []string
		for _, line := range strings.Split(r.Messages[1].Content, "\n") {
			if i := strings.Index(line, "FACT"); i >= 0 {
				facts = append(facts, "- "+line[i:])
			}
		}
		return llmtest.Reply("## Facts\n" + strings.Join(facts, "\n"))
	}
	goal := r.LastMessage().Content
	if len(goal) > 40 {
		goal = goal[:40]
	}
	return llmtest.Reply("answer to " + goal + " " + strings.Repeat("z", d.pad))
}

func (d *digestModel) calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sideCalls
}

// digestOf returns the digest message of a request, "" when it has none;
// it must sit right after the system prompt and the first user message.
func digestOf(t *testing.T, r llmtest.Recorded) string {
	t.Helper()
	for i, m := range r.Messages {
		if m.Role == "system" && strings.HasPrefix(m.Content, agent.DigestMarker) {
			if i != 2 || r.Messages[1].Role != "user" {
				t.Fatalf("digest at message %d, want 2 (after the system prompt and the goal)", i)
			}
			return m.Content
		}
	}
	return ""
}

// TestDigestSurvivesWorkerChange runs a long chat through a real `odek
// worker` and Redis with an 8k-token window: the conversation is
// compacted into a digest saved with the session, the worker is killed,
// and a second worker continues the chat with the digest, which still
// carries a fact stated early on.
func TestDigestSurvivesWorkerChange(t *testing.T) {
	d := &digestModel{pad: 6000}
	llm := llmtest.NewHandler(t, d.handle)
	e := newQueueEnv(t, llm.URL, false, 2*time.Second, 3)
	if err := os.WriteFile(filepath.Join(e.home, "config.json"), []byte(`{"context_window":{"test-model":8000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	submit := func(goal string) {
		t.Helper()
		out := runOdekEnv(t, llm.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "42", "--wait", goal)
		if out.code != 0 || !strings.HasPrefix(out.stdout, "answer to ") {
			t.Fatalf("submit %q: exit %d stdout %.80q stderr %s", goal, out.code, out.stdout, out.stderr)
		}
	}
	w1 := e.startWorker("w1")
	submit("hello, I am planning a trip")
	submit("FACT: my cat is called Zorro and must come along")
	for i := range 4 {
		submit("message " + string(rune('c'+i)) + " " + strings.Repeat("w", 4000))
	}
	if d.calls() == 0 {
		t.Fatalf("no compaction over six messages of ~2.5k tokens in an 8k window\n%s", w1.stderr.String())
	}
	w1.kill(t)
	e.startWorker("w2")
	submit("what is my cat called?")
	reqs := llm.Requests()
	last := reqs[len(reqs)-1]
	dg := digestOf(t, last)
	if !strings.Contains(dg, "Zorro") {
		t.Fatalf("the second worker's request lacks the digest with the early fact; digest %q", dg)
	}
	if len(last.Body) > 8000*4 {
		t.Errorf("request of %d bytes is over the 8k-token window", len(last.Body))
	}
	if !strings.Contains(last.LastMessage().Content, "what is my cat called?") {
		t.Fatalf("the new message is not last: %q", last.LastMessage().Content)
	}
}

// TestSessionCompactCommand: `odek session compact` folds a stored CLI
// session into a digest with one side call, and `odek continue` sends it.
func TestSessionCompactCommand(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	d := &digestModel{pad: 10}
	llm := llmtest.NewHandler(t, d.handle)
	run := func(args ...string) runOut {
		return runOdekEnv(t, llm.URL, work, []string{"ODEK_HOME=" + home}, args...)
	}
	if out := run("session", "compact"); out.code == 0 {
		t.Fatalf("compact without any session: %+v", out)
	}
	if out := run("run", "--session", "--quiet", "start"); out.code != 0 {
		t.Fatalf("run: %+v", out)
	}
	for _, g := range []string{"FACT: the deadline is 3 May", "second", "third"} {
		if out := run("continue", "--quiet", g); out.code != 0 {
			t.Fatalf("continue: %+v", out)
		}
	}
	out := run("session", "compact", "--keep", "1")
	if out.code != 0 || !strings.Contains(out.stdout, "folded") || d.calls() != 1 {
		t.Fatalf("session compact: %+v (side calls %d)", out, d.calls())
	}
	store := &session.FileStore{Dir: filepath.Join(home, "sessions")}
	s, err := store.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Messages[0].Content != "start" || !agent.IsDigest(&s.Messages[1]) || !strings.Contains(s.Messages[1].Content, "3 May") {
		b, _ := json.MarshalIndent(s.Messages, "", " ")
		t.Fatalf("compacted session:\n%s", b)
	}
	if out := run("session", "compact", "--id", "../x"); out.code != 3 {
		t.Fatalf("bad id not refused: %+v", out)
	}
	if out := run("continue", "--quiet", "when is the deadline?"); out.code != 0 {
		t.Fatalf("continue after compact: %+v", out)
	}
	reqs := llm.Requests()
	if dg := digestOf(t, reqs[len(reqs)-1]); !strings.Contains(dg, "3 May") {
		t.Fatalf("continue did not send the digest: %q", dg)
	}
}
