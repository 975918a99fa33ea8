package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
)

// A program hidden in an option is code execution: through a real worker
// with the default policy and real Redis, each job's model runs a command
// whose program-running option the classifier once read as a plain write
// or a read (tar --checkpoint-action, zip -TT, env -S, awk after -F). Each
// call reaches the chat as an approval question naming code_execution;
// the chat says no, and the program never runs: its marker file never
// appears, and the model is told the class.
func TestWorkerProgramsHiddenInOptionsNeedApproval(t *testing.T) {
	cmds := map[string]string{
		"tar": "echo data > somefile && tar --checkpoint=1 --checkpoint-action=exec='touch MARKER_TAR' -cf x.tar somefile",
		"zip": "echo data > f2 && zip -q x.zip f2 -T -TT 'touch MARKER_ZIP #'",
		"env": `env -S 'sh -c "touch MARKER_ENV"'`,
		"awk": `awk -F : 'BEGIN { system("touch MARKER_AWK") }'`,
	}
	var mu sync.Mutex
	told := map[string]string{} // goal -> the tool result the model saw
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g, res := currentTurn(r)
		if len(res) == 0 {
			args, _ := json.Marshal(map[string]string{"command": cmds[g]})
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: string(args)})
		}
		mu.Lock()
		told[g] = res[0]
		mu.Unlock()
		return llmtest.Reply("done")
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	artifacts := t.TempDir()
	// No config.json: the worker runs with the default policy, which
	// allows local_write and asks the chat about code_execution.
	w := e.startWorker("w1", "--artifacts", artifacts, "--approval-timeout", "30s")

	jobs := map[string]string{} // job id -> goal
	chat := map[string]int64{}
	var ids []string
	var n int64
	for g := range cmds {
		n++
		j := e.enqueue(queue.Job{ChatID: n, UserID: n, Goal: g, IdempotencyKey: "exec-" + g})
		jobs[j.ID], chat[g] = g, n
		ids = append(ids, j.ID)
	}
	asked := map[string]string{} // goal -> question
	got := map[string]queue.Result{}
	for deadline := time.Now().Add(90 * time.Second); len(got) < len(ids); {
		if time.Now().After(deadline) {
			t.Fatalf("results for %d of %d jobs; questions %q\n%s", len(got), len(ids), asked, w.stderr.String())
		}
		qs, _ := e.q.ReadApprovals(context.Background(), "test-frontend", 10, 200*time.Millisecond)
		for _, q := range qs {
			asked[jobs[q.JobID]] = q.Question
			if err := e.q.Answer(context.Background(), q.ID, false); err != nil {
				t.Fatal(err)
			}
		}
		e.drainResults(got, 100*time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for g := range cmds {
		marker := filepath.Join(chatDir(t, artifacts, chat[g]), "MARKER_"+strings.ToUpper(g))
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s: the hidden program ran without approval (%s exists); the model saw %q", g, marker, told[g])
		}
		if q := asked[g]; !strings.Contains(q, "code_execution") {
			t.Errorf("%s: the chat was asked %q, want a question naming code_execution", g, q)
		}
		if s := told[g]; !strings.Contains(s, "code_execution") || !strings.Contains(s, "declined") {
			t.Errorf("%s: the model was told %q, want the declined class", g, s)
		}
	}
}
