package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
)

// A queued job's output_schema (issue 28) through `odek queue submit` and
// a real `odek worker` on a real Redis: a valid answer comes back parsed
// in the result's output, an invalid one is repaired within the job, one
// that stays invalid fails the job with exit code 5, and a schema that
// does not compile never reaches the queue (submit) or fails the job as a
// setup error (a job enqueued by another client).
func TestQueuedJobOutputSchema(t *testing.T) {
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		goal := r.Messages[1].Content
		switch {
		case strings.HasPrefix(goal, "valid"):
			return llmtest.Reply("```json\n{\"city\":\"Oslo\",\"population\":709000}\n```")
		case strings.HasPrefix(goal, "repaired"):
			if len(r.Messages) <= 2 || !strings.Contains(r.LastMessage().Content, "not a JSON value") {
				return llmtest.Reply("Oslo, about 709k people.")
			}
			return llmtest.Reply(`{"city":"Oslo","population":709000}`)
		default:
			return llmtest.Reply(`{"city":"Oslo"}`)
		}
	})
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	e.startWorker("w1")
	schema := writeSchema(t)

	type result struct {
		Status   string         `json:"status"`
		ExitCode int            `json:"exit_code"`
		Error    string         `json:"error"`
		Answer   string         `json:"answer"`
		Output   map[string]any `json:"output"`
	}
	submit := func(chat, goal string, extra ...string) (result, runOut) {
		t.Helper()
		args := append([]string{"queue", "submit", "--chat", chat, "--key", goal, "--wait", "--json", "--timeout", "60s", "--output-schema", schema}, extra...)
		out := runOdekEnv(t, srv.URL, t.TempDir(), e.env, append(args, goal)...)
		var res result
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
			t.Fatalf("%s: %v: stdout %q stderr %s", goal, err, out.stdout, out.stderr)
		}
		return res, out
	}

	res, out := submit("1", "valid: largest city of Norway")
	if out.code != 0 || res.Status != "succeeded" || res.Output["city"] != "Oslo" || res.Output["population"] != float64(709000) || res.Answer != `{"city":"Oslo","population":709000}` {
		t.Fatalf("valid: exit %d %+v", out.code, res)
	}
	res, out = submit("2", "repaired: largest city of Norway")
	if out.code != 0 || res.Status != "succeeded" || res.Output["city"] != "Oslo" {
		t.Fatalf("repaired: exit %d %+v", out.code, res)
	}
	res, out = submit("3", "invalid: largest city of Norway", "--output-repairs", "1")
	if out.code != 5 || res.Status != "failed" || res.ExitCode != 5 || !strings.HasPrefix(res.Error, "output_invalid: ") || !strings.Contains(res.Error, "population") || res.Output != nil {
		t.Fatalf("invalid: exit %d %+v", out.code, res)
	}
	// One corrective turn was given, then the job failed: two model calls.
	n := 0
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Messages[1].Content, "invalid:") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the invalid job made %d model calls, want 2 (one repair)", n)
	}

	// A schema with an external $ref is refused by submit, before the queue.
	bad := writeFile(t, `{"$ref":"https://example.com/s.json"}`)
	out = runOdekEnv(t, srv.URL, t.TempDir(), e.env, "queue", "submit", "--chat", "4", "--key", "k4", "--output-schema", bad, "x")
	if out.code != 3 || !strings.Contains(out.stderr, "--output-schema") {
		t.Fatalf("bad schema at submit: exit %d %q", out.code, out.stderr)
	}
	// The same schema from another client: the worker fails the job as a
	// setup error that names the field.
	j := e.enqueue(queue.Job{ChatID: 5, Goal: "valid: x", OutputSchema: json.RawMessage(`{"$ref":"https://example.com/s.json"}`)})
	got := e.results(30*time.Second, j.ID)[j.ID]
	if got.Status != queue.StatusFailed || got.ExitCode != 3 || !strings.Contains(got.Error, "output_schema") {
		t.Fatalf("uncompilable schema: %+v", got)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
