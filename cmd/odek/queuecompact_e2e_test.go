package main_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// `odek queue submit --kind compact` compacts a chat's conversation on a
// real worker (with the worker's model) from the command line, the way the
// compose bot's /compact does: the next job of the chat carries the digest
// instead of the folded turns. A goal or --output-schema beside it is a
// usage error.
func TestQueueSubmitCompact(t *testing.T) {
	var mu sync.Mutex
	var lastReq []llm.Message
	digestCalls := 0
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(r.Messages[0].Content, "You keep the memory of a long conversation") {
			digestCalls++
			return llmtest.Reply("## Facts\n- the user's cat is called Mimi")
		}
		lastReq = r.Messages
		return llmtest.Reply("noted: " + r.LastMessage().Content)
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	e.startWorker("w1")
	for _, m := range []string{"my cat is called Mimi", "I live in Bonn", "I like tea", "I work at night"} {
		out := runOdekEnv(t, srv.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "42", "--session", "telegram:42", "--key", m, "--wait", m)
		if out.code != 0 {
			t.Fatalf("%s: exit %d %s", m, out.code, out.stderr)
		}
	}
	out := runOdekEnv(t, srv.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "42", "--session", "telegram:42", "--key", "c1", "--kind", "compact", "--wait")
	if out.code != 0 || !strings.HasPrefix(out.stdout, "Compacted: ") {
		t.Fatalf("compact: exit %d stdout %q stderr %s", out.code, out.stdout, out.stderr)
	}
	out = runOdekEnv(t, srv.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "42", "--session", "telegram:42", "--key", "q", "--wait", "what is my cat called?")
	if out.code != 0 {
		t.Fatalf("after compact: exit %d %s", out.code, out.stderr)
	}
	mu.Lock()
	var digest, folded bool
	for _, m := range lastReq {
		digest = digest || strings.Contains(m.Content, "[odek: digest") && strings.Contains(m.Content, "Mimi")
		folded = folded || m.Content == "I live in Bonn"
	}
	if digestCalls != 1 || !digest || folded {
		t.Errorf("%d digest calls; the next request has the digest %v, still the folded turn %v", digestCalls, digest, folded)
	}
	mu.Unlock()
	for _, args := range [][]string{
		{"queue", "submit", "--chat", "42", "--kind", "compact", "a goal"},
		{"queue", "submit", "--chat", "42", "--kind", "shrink"},
	} {
		if out := runOdekEnv(t, srv.URL, t.TempDir(), e.env, args...); out.code != 3 || !strings.Contains(out.stderr, "--kind") {
			t.Errorf("%q: exit %d %s", args, out.code, out.stderr)
		}
	}
}
