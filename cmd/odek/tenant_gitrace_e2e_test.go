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

// A driver written into a repository's configuration after the shell
// tool checked it, and before git reads it, does not run without a
// question (issue 21, the configuration race; internal/tools/gitline.go).
// Through a real worker with the default policy, its sandbox and real
// Redis, each chat holds a clean repository and, beside it, lib/ — a
// repository whose .git/config defines filter "x" and whose
// .gitattributes selects it for every file (what an approved extraction
// of an upload leaves). `cp -r lib/. .` copies both over the clean ones;
// it names no git path, so alone it is local_write, and the next git
// command's check would see the filter. Each job writes after that check:
//
//   - inline: `cp -r lib/. . && git add -A` in one line;
//   - parallel: two calls of one reply, `sleep 1 && cp -r lib/. .` and
//     `sleep 2 && git add -A` (on main the second is checked at once, the
//     copy lands a second later and git reads it a second after that);
//   - leftover: `(sleep 2; cp -r lib/. .) &`, then `sleep 4; git add -A`
//     in the next call, while the first call's process is still alive.
//
// Every question is answered no. The filter must never run. On main each
// job runs its git with no question and the filter runs.
func TestWorkerGitConfigRaceNeedsApproval(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	steps := map[string][]llmtest.Turn{}
	call := func(cmds ...string) llmtest.Turn {
		var cs []llmtest.Call
		for i, c := range cmds {
			args, _ := json.Marshal(map[string]string{"command": c})
			cs = append(cs, llmtest.Call{ID: "c" + string(rune('a'+i)), Name: "shell", Arguments: string(args)})
		}
		return llmtest.CallTools(cs...)
	}
	steps["inline"] = []llmtest.Turn{call("cp -r lib/. . && git add -A")}
	steps["parallel"] = []llmtest.Turn{call("sleep 1 && cp -r lib/. .", "sleep 2 && git add -A")}
	steps["leftover"] = []llmtest.Turn{call("(sleep 2; cp -r lib/. .) >/dev/null 2>&1 &"), call("sleep 4; git add -A")}
	var mu sync.Mutex
	told := map[string][]string{}
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		mu.Lock()
		told[g] = res
		mu.Unlock()
		turns := steps[g]
		// Each turn's calls answer before the next turn.
		n := 0
		for i, turn := range turns {
			if len(res) == n {
				return turns[i]
			}
			n += len(turn.ToolCalls)
		}
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	artifacts := t.TempDir()
	const ident = "GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com "
	chats := map[string]int64{"inline": 41, "parallel": 42, "leftover": 43}
	for _, id := range chats {
		dir := chatDir(t, artifacts, id)
		for _, c := range []string{
			"git init -q . && echo one > f && git add f && " + ident + "git commit -q -m one",
			"mkdir lib && cd lib && git init -q . && printf '* filter=x\\n' > .gitattributes && echo two > g && " +
				`printf '[filter "x"]\n\tclean = "touch MARKER_FILTER; cat"\n' >> .git/config`,
		} {
			cmd := exec.Command("sh", "-c", c)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
		}
	}
	w := e.startWorker("w1", "--artifacts", artifacts, "--approval-timeout", "30s")
	for _, goal := range []string{"inline", "parallel", "leftover"} {
		id := chats[goal]
		j := e.enqueue(queue.Job{ChatID: id, UserID: id, Goal: goal, IdempotencyKey: "race-" + goal})
		got := map[string]queue.Result{}
		question := ""
		for deadline := time.Now().Add(60 * time.Second); got[j.ID].JobID == ""; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no result; asked %q\n%s", goal, question, w.stderr.String())
			}
			qs, _ := e.q.ReadApprovals(context.Background(), "test-frontend", 10, 200*time.Millisecond)
			for _, q := range qs {
				question += q.Question
				if err := e.q.Answer(context.Background(), q.ID, false); err != nil {
					t.Fatal(err)
				}
			}
			e.drainResults(got, 100*time.Millisecond)
		}
		mu.Lock()
		seen := told[goal]
		mu.Unlock()
		dir := chatDir(t, artifacts, id)
		if _, err := os.Stat(filepath.Join(dir, "MARKER_FILTER")); err == nil {
			t.Errorf("%s: the planted filter ran without approval; asked %q; the model saw %q", goal, question, seen)
		}
		switch goal {
		case "inline", "leftover":
			if !strings.Contains(question, "code_execution") {
				t.Errorf("%s: asked %q, want a code_execution question", goal, question)
			}
		case "parallel":
			// Either git ran first, on the clean configuration, or it ran
			// after the copy and was refused; both copies happened.
			if _, err := os.Stat(filepath.Join(dir, ".gitattributes")); err != nil {
				t.Errorf("parallel: the copy did not happen (%v); the model saw %q", err, seen)
			}
		}
	}
}
