package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
)

// Programs a repository's own files name do not run on everyday git
// commands: through a real worker with the default policy and real Redis,
// one job plants a pre-commit hook and a core.fsmonitor command in its
// repository (chat 1, by the shell; the chat is asked about
// code_execution and says yes), or extracts an uploaded tarball that
// carries them (chat 2, approved the same way). A later job in each chat
// runs git status, diff, add, commit and log with no approval: none is
// asked, the commands work, and the planted programs never run.
func TestWorkerGitRepositoryProgramsDoNotRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	const ident = "GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com "
	plant := `git init -q . && printf '#!/bin/sh\ntouch MARKER_HOOK\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && ` +
		`printf '[core]\n\tfsmonitor = "touch MARKER_FSMON; false"\n\tpager = "touch MARKER_PAGER; cat"\n' >> .git/config`
	use := "echo hi > f && git status && git diff && git add f && " + ident + "git commit -q -m one && git log --oneline"
	steps := map[string]string{
		"plant":          plant,
		"plant-status":   use,
		"extract":        "tar xf upload.tar",
		"extract-status": use,
	}
	var mu sync.Mutex
	told := map[string]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) == 0 {
			args, _ := json.Marshal(map[string]string{"command": steps[g]})
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
		}
		mu.Lock()
		told[g] = res[0]
		mu.Unlock()
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	artifacts := t.TempDir()

	// Chat 2's upload: a repository whose hooks and .git/config run
	// programs, as a tarball in the chat's directory.
	src := t.TempDir()
	for _, c := range []string{"git init -q .", plant} {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	chat2 := chatDir(t, artifacts, 2)
	if err := os.MkdirAll(chat2, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-C", src, "-cf", filepath.Join(chat2, "upload.tar"), ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}

	w := e.startWorker("w1", "--artifacts", artifacts, "--approval-timeout", "30s")
	run := func(chat int64, goal string, approve bool) (question string, res queue.Result) {
		t.Helper()
		j := e.enqueue(queue.Job{ChatID: chat, UserID: chat, Goal: goal, IdempotencyKey: "git-" + goal})
		got := map[string]queue.Result{}
		for deadline := time.Now().Add(60 * time.Second); got[j.ID].JobID == ""; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no result; asked %q\n%s", goal, question, w.stderr.String())
			}
			qs, _ := e.q.ReadApprovals(context.Background(), "test-frontend", 10, 200*time.Millisecond)
			for _, q := range qs {
				question += q.Question
				if err := e.q.Answer(context.Background(), q.ID, approve); err != nil {
					t.Fatal(err)
				}
			}
			e.drainResults(got, 100*time.Millisecond)
		}
		return question, got[j.ID]
	}
	for _, c := range []struct {
		chat  int64
		plant string
	}{{1, "plant"}, {2, "extract"}} {
		dir := chatDir(t, artifacts, c.chat)
		q, _ := run(c.chat, c.plant, true)
		if !strings.Contains(q, "code_execution") {
			t.Errorf("%s: the chat was asked %q, want a question naming code_execution", c.plant, q)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit")); err != nil {
			mu.Lock()
			t.Fatalf("%s: the approved planting did not happen (%v); the model saw %q", c.plant, err, told[c.plant])
		}
		goal := c.plant + "-status"
		q, _ = run(c.chat, goal, false)
		if q != "" {
			t.Errorf("%s: the chat was asked %q, want no question for everyday git commands", goal, q)
		}
		mu.Lock()
		seen := told[goal]
		mu.Unlock()
		if !strings.Contains(seen, "exit code: 0") || !strings.Contains(seen, "one") {
			t.Errorf("%s: the git commands failed; the model saw %q", goal, seen)
		}
		for _, m := range []string{"MARKER_HOOK", "MARKER_FSMON", "MARKER_PAGER"} {
			if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
				t.Errorf("%s: a program the repository named ran without approval (%s exists); the model saw %q", goal, m, seen)
			}
		}
	}
}

// A filter driver a repository's configuration defines — which git has no
// switch to turn off — makes the everyday git commands that would run it
// ask: through a real worker with the default policy and real Redis, a
// chat extracts an uploaded repository whose .git/config defines
// filter "x" and whose .gitattributes selects it (approved, as
// code_execution), and the next job's git status and add reach the chat
// as a code_execution question naming filter.x.clean; denied, the filter
// never runs. On the classifier before the repository inspection, that
// job ran with no question and the filter ran.
func TestWorkerPlantedGitDriverNeedsApproval(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	steps := map[string]string{
		"extract": "tar xf upload.tar",
		"use":     "echo hi > f && git status && git add f",
	}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) == 0 {
			args, _ := json.Marshal(map[string]string{"command": steps[g]})
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
		}
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	artifacts := t.TempDir()
	src := t.TempDir()
	for _, c := range []string{"git init -q .", `printf '* filter=x\n' > .gitattributes`,
		`printf '[filter "x"]\n\tclean = "touch MARKER_FILTER; cat"\n' >> .git/config`} {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	dir := chatDir(t, artifacts, 3)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-C", src, "-cf", filepath.Join(dir, "upload.tar"), ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	w := e.startWorker("w1", "--artifacts", artifacts, "--approval-timeout", "30s")
	run := func(goal string, approve bool) (question string) {
		t.Helper()
		j := e.enqueue(queue.Job{ChatID: 3, UserID: 3, Goal: goal, IdempotencyKey: "driver-" + goal})
		got := map[string]queue.Result{}
		for deadline := time.Now().Add(60 * time.Second); got[j.ID].JobID == ""; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no result; asked %q\n%s", goal, question, w.stderr.String())
			}
			qs, _ := e.q.ReadApprovals(context.Background(), "test-frontend", 10, 200*time.Millisecond)
			for _, q := range qs {
				question += q.Question
				if err := e.q.Answer(context.Background(), q.ID, approve); err != nil {
					t.Fatal(err)
				}
			}
			e.drainResults(got, 100*time.Millisecond)
		}
		return question
	}
	if q := run("extract", true); !strings.Contains(q, "code_execution") {
		t.Fatalf("extract: asked %q, want a code_execution question", q)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "config")); err != nil {
		t.Fatalf("the approved extraction did not happen: %v", err)
	}
	q := run("use", false)
	if !strings.Contains(q, "code_execution") || !strings.Contains(q, "filter.x.clean") {
		t.Errorf("use: asked %q, want a code_execution question naming filter.x.clean", q)
	}
	if _, err := os.Stat(filepath.Join(dir, "MARKER_FILTER")); err == nil {
		t.Errorf("the planted filter ran without approval")
	}
}
