package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/sandbox/sandboxtest"
	"github.com/odekrun/odek/queue"
)

// An "allow for this session" grant allows exactly the command line the
// chat saw, not another that reads the same once its whitespace is
// folded (found by the adversarial pass of issue 21). Through a real
// worker and real Redis: the first job asks to run
//
//	python3 -c "print(1) # open('MARKER_GRANT','w')"
//
// — the open is a Python comment — and the chat allows it for the
// session (the grant the bot records on that press). The second job, in
// the same session, runs the same words with a newline after the "#":
// the open now runs. On main its question read the same and the grant
// ran it unasked; now its question ends in "…", is not grantable, and is
// asked (and denied here).
func TestWorkerSessionGrantIsExact(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	cmds := map[string]string{
		"granted": `python3 -c "print(1) # open('MARKER_GRANT','w')"`,
		"folded":  "python3 -c \"print(1) #\nopen('MARKER_GRANT','w')\"",
	}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) == 0 {
			args, _ := json.Marshal(map[string]string{"command": cmds[g]})
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
		}
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 1)
	artifacts := t.TempDir()
	w := e.startWorker("w1", "--artifacts", artifacts, "--approval-timeout", "30s")
	const session = "telegram:61"
	ctx := context.Background()
	run := func(goal string, answer func(q queue.Approval) bool) (asked []string) {
		t.Helper()
		j := e.enqueue(queue.Job{ChatID: 61, UserID: 61, SessionID: session, Goal: goal, IdempotencyKey: "grant-" + goal})
		got := map[string]queue.Result{}
		for deadline := time.Now().Add(60 * time.Second); got[j.ID].JobID == ""; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no result; asked %q\n%s", goal, asked, w.stderr.String())
			}
			qs, _ := e.q.ReadApprovals(ctx, "test-frontend", 10, 200*time.Millisecond)
			for _, q := range qs {
				asked = append(asked, q.Question)
				if err := e.q.Answer(ctx, q.ID, answer(q)); err != nil {
					t.Fatal(err)
				}
			}
			e.drainResults(got, 100*time.Millisecond)
		}
		return asked
	}
	asked := run("granted", func(q queue.Approval) bool {
		if !queue.SessionGrantable(q.Question) {
			t.Fatalf("the first question is not grantable: %q", q.Question)
		}
		if err := e.q.GrantSession(ctx, session, q.Question, time.Hour); err != nil {
			t.Fatal(err)
		}
		return true
	})
	if len(asked) != 1 {
		t.Fatalf("the first job asked %q, want one question", asked)
	}
	dir := chatDir(t, artifacts, 61)
	if _, err := os.Stat(filepath.Join(dir, "MARKER_GRANT")); err == nil {
		t.Fatal("the granted line ran its comment")
	}
	asked = run("folded", func(queue.Approval) bool { return false })
	if _, err := os.Stat(filepath.Join(dir, "MARKER_GRANT")); err == nil {
		t.Errorf("the second line ran under the first's grant; asked %q", asked)
	}
	if len(asked) != 1 || !strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(asked[0]), "[y/N]")), "…)?") {
		t.Errorf("the second job asked %q, want one question whose command ends in …", asked)
	}
}
