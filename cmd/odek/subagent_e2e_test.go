package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// These tests drive the real binary: a parent `odek subagent` at depth 0
// delegates with delegate_tasks to real `odek subagent` child processes,
// all against one fake LLM whose replies are rules over the goal text
// (the first user message).

const testKey = "sk-test-key-0123456789abcdef"

type subResult struct {
	Status          string  `json:"status"`
	Summary         string  `json:"summary"`
	Error           string  `json:"error"`
	TimedOut        bool    `json:"timed_out"`
	Iterations      int     `json:"iterations"`
	DurationSeconds float64 `json:"duration_seconds"`
	TokensUsed      int     `json:"tokens_used"`
	Artifacts       []struct {
		ID     string `json:"id"`
		URI    string `json:"uri"`
		SHA256 string `json:"sha256"`
	} `json:"artifacts"`
	Denials []struct {
		Class, Reason string
	} `json:"denials"`
}

func parseSub(t *testing.T, out runOut) subResult {
	t.Helper()
	var r subResult
	if err := json.Unmarshal([]byte(out.stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON result: %q (%v)\nstderr: %s", out.stdout, err, out.stderr)
	}
	return r
}

// subHome makes an ODEK_HOME with the given operator config.
func subHome(t *testing.T, config string) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), ".odek")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func goalOf(r llmtest.Recorded) string {
	for _, m := range r.Messages {
		if m.Role == llm.RoleUser {
			return m.Content
		}
	}
	return ""
}

func toolResults(r llmtest.Recorded) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

func hasTool(r llmtest.Recorded, name string) bool {
	for _, s := range r.Tools {
		if s.Function.Name == name {
			return true
		}
	}
	return false
}

func delegateCall(goals ...string) llmtest.Turn {
	var tasks []map[string]string
	for _, g := range goals {
		tasks = append(tasks, map[string]string{"goal": g, "future_field": "ignored"})
	}
	b, _ := json.Marshal(map[string]any{"tasks": tasks})
	return llmtest.CallTools(llmtest.Call{ID: "d1", Name: "delegate_tasks", Arguments: string(b)})
}

func subEvents(t *testing.T, path string) []events.Event { return readEvents(t, path) }

func count(evs []events.Event, typ events.Type) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestSubagentParallelTasks(t *testing.T) {
	const n = 3
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	var childReqs []llmtest.Recorded
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		switch {
		case strings.HasPrefix(g, "PARENT"):
			if len(toolResults(r)) == 0 {
				return delegateCall("CHILD a", "CHILD b", "CHILD c")
			}
			return llmtest.Reply("parent saw: " + toolResults(r)[0])
		case strings.HasPrefix(g, "CHILD"):
			mu.Lock()
			childReqs = append(childReqs, r)
			arrived++
			if arrived == n {
				close(all)
			}
			mu.Unlock()
			// A barrier: no child answers before all three asked, which
			// only happens when they run in parallel.
			select {
			case <-all:
			case <-time.After(20 * time.Second):
				return llmtest.Reply("barrier timeout")
			}
			return llmtest.Reply("done with " + strings.Fields(g)[1])
		}
		return llmtest.Reply("?")
	}).RequireAPIKey(testKey)
	home := subHome(t, "")
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + home, "ODEK_SUBAGENT_DEPTH=0"},
		"subagent", "--events-jsonl", evPath, "--goal", "PARENT fan out")
	if out.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", out.code, out.stdout, out.stderr)
	}
	r := parseSub(t, out)
	for _, want := range []string{"done with a", "done with b", "done with c", "task 1 (t1-", "task 3 (t3-", ": success"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("parent summary lacks %q:\n%s", want, r.Summary)
		}
	}
	if strings.Contains(r.Summary, "barrier timeout") {
		t.Fatal("children did not run in parallel")
	}
	// Children authenticated (RequireAPIKey) with a key that is in neither
	// their environment nor their argv: delegate strips it and passes fd 3.
	mu.Lock()
	for _, cr := range childReqs {
		if hasTool(cr, "delegate_tasks") != true {
			t.Errorf("child at depth 1 < max_depth 2 should be offered delegate_tasks")
		}
	}
	mu.Unlock()
	evs := subEvents(t, evPath)
	if count(evs, events.SubagentSpawned) != n || count(evs, events.SubagentCompleted) != n {
		t.Fatalf("spawned/completed events: %d/%d", count(evs, events.SubagentSpawned), count(evs, events.SubagentCompleted))
	}
	if count(evs, events.SubagentConcurrencyWait) != 0 {
		t.Error("no task should wait with max_concurrency 3")
	}
	for _, e := range evs {
		if e.Type == events.SubagentSpawned {
			if num(e.Data["depth"]) != 1 || len(e.Data["goal_sha256"].(string)) != 16 {
				t.Errorf("spawned %v", e.Data)
			}
		}
	}
	b, _ := os.ReadFile(evPath)
	if bytes.Contains(b, []byte("CHILD a")) || bytes.Contains(b, []byte(testKey)) {
		t.Fatal("events carry a goal or the key")
	}
}

func TestSubagentConcurrencyWaitAndDepthLimit(t *testing.T) {
	var mu sync.Mutex
	var childTools []bool
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		switch {
		case strings.HasPrefix(g, "PARENT"):
			if len(toolResults(r)) == 0 {
				return delegateCall("CHILD nest 1", "CHILD nest 2", "CHILD nest 3")
			}
			return llmtest.Reply("parent saw: " + toolResults(r)[0])
		case strings.HasPrefix(g, "CHILD"):
			if len(toolResults(r)) == 0 {
				mu.Lock()
				childTools = append(childTools, hasTool(r, "delegate_tasks"))
				mu.Unlock()
				// The model tries to delegate further anyway.
				return delegateCall("GRANDCHILD")
			}
			return llmtest.Reply("child saw: " + toolResults(r)[0])
		}
		return llmtest.Reply("grandchild must never run")
	})
	home := subHome(t, `{"subagent":{"max_concurrency":1,"max_depth":1}}`)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + home, "ODEK_SUBAGENT_DEPTH=0"},
		"subagent", "--events-jsonl", evPath, "--goal", "PARENT nest")
	if out.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	r := parseSub(t, out)
	if strings.Contains(r.Summary, "grandchild must never run") {
		t.Fatal("a grandchild ran beyond max_depth")
	}
	if !strings.Contains(r.Summary, `unknown tool "delegate_tasks"`) {
		t.Errorf("child at max depth should not have delegate_tasks:\n%s", r.Summary)
	}
	mu.Lock()
	if len(childTools) != 3 || childTools[0] || childTools[1] || childTools[2] {
		t.Errorf("children offered delegate_tasks: %v", childTools)
	}
	mu.Unlock()
	evs := subEvents(t, evPath)
	waits := map[float64]bool{}
	for _, e := range evs {
		if e.Type == events.SubagentConcurrencyWait {
			waits[num(e.Data["task_index"])] = true
		}
	}
	if len(waits) != 2 {
		t.Fatalf("with max_concurrency 1, two of three tasks must wait; got waits for %v", waits)
	}
}

func writeTask(t *testing.T, task map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(task)
	p := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSubagentTimeoutExitsTwo(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "never", Delay: 30 * time.Second})
	task := writeTask(t, map[string]any{"goal": "slow", "timeout_seconds": 0.5})
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + subHome(t, "")}, "subagent", "--task", task)
	if out.code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	r := parseSub(t, out)
	if !r.TimedOut || r.Status != "error" || !strings.Contains(r.Error, "timeout") {
		t.Fatalf("result %+v", r)
	}
}

func TestSubagentBudgetShareExhaustedExitsFour(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("must not be asked"))
	for _, flag := range []string{"runtime_exhausted", "tool_calls_exhausted", "cost_exhausted"} {
		t.Run(flag, func(t *testing.T) {
			task := writeTask(t, map[string]any{"goal": "anything", "budget": map[string]any{"max_tool_calls": 0, flag: true}})
			out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + subHome(t, "")}, "subagent", "--task", task)
			if out.code != 4 {
				t.Fatalf("exit %d, want 4\n%s\n%s", out.code, out.stdout, out.stderr)
			}
			if r := parseSub(t, out); r.Status != "budget_exhausted" || !strings.Contains(r.Error, "budget") {
				t.Fatalf("result %+v", r)
			}
		})
	}
	if srv.Calls() != 0 {
		t.Fatalf("an exhausted budget still reached the model (%d calls)", srv.Calls())
	}
}

func TestSubagentBudgetShareClampsChild(t *testing.T) {
	// The child inherits 1 remaining tool call; its second batch is cut.
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		return llmtest.CallTools(llmtest.Call{Name: "list_dir", Arguments: `{"path":"."}`})
	})
	task := writeTask(t, map[string]any{"goal": "loop", "budget": map[string]any{"max_tool_calls": 1}})
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + subHome(t, "")}, "subagent", "--task", task)
	if out.code != 4 {
		t.Fatalf("exit %d, want 4\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	if r := parseSub(t, out); r.Status != "budget_exhausted" || !strings.Contains(r.Error, "tool_calls") {
		t.Fatalf("result %+v", r)
	}
}

func TestSubagentSetupErrorsExitThree(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(big, append([]byte(`{"goal":"x","pad":"`), append(bytes.Repeat([]byte("a"), 300<<10), '"', '}')...), 0o600)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no task", []string{"subagent"}, "exactly one of"},
		{"both", []string{"subagent", "--goal", "g", "--task", "f"}, "exactly one of"},
		{"missing file", []string{"subagent", "--task", "/nonexistent/task.json"}, "task file"},
		{"no goal", []string{"subagent", "--task", writeTask(t, map[string]any{"context": "c", "unknown": 1})}, "goal is required"},
		{"too big", []string{"subagent", "--task", big}, "limit of 262144 bytes"},
		{"bad risk", []string{"subagent", "--task", writeTask(t, map[string]any{"goal": "g", "max_risk": "yolo"})}, "max_risk"},
		{"bad flag", []string{"subagent", "--nope"}, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := runOdekEnv(t, "http://127.0.0.1:1/v1", t.TempDir(), []string{"ODEK_HOME=" + subHome(t, "")}, tt.args...)
			if out.code != 3 {
				t.Fatalf("exit %d, want 3\n%s\n%s", out.code, out.stdout, out.stderr)
			}
			r := parseSub(t, out)
			if r.Status != "error" || !strings.Contains(r.Error, tt.want) {
				t.Fatalf("result %+v, want error containing %q", r, tt.want)
			}
		})
	}
}

var stageRe = regexp.MustCompile(`write them under (\S+)/ `)
var taskIDRe = regexp.MustCompile(`task 1 \((t1-[0-9a-f]+)\)`)

func TestSubagentArtifactsInlinedAndPaged(t *testing.T) {
	bigText := strings.Repeat("0123456789abcdef", 40<<10/16) // 40 KiB of text: paged, not inlined
	var mu sync.Mutex
	var pages []string
	var delegated string
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		res := toolResults(r)
		switch {
		case strings.HasPrefix(g, "PARENT"):
			switch len(res) {
			case 0:
				return delegateCall("CHILD write files")
			case 1:
				mu.Lock()
				delegated = res[0]
				mu.Unlock()
				m := taskIDRe.FindStringSubmatch(res[0])
				if m == nil {
					return llmtest.Reply("no task id in: " + res[0])
				}
				return llmtest.CallTools(
					llmtest.Call{ID: "r1", Name: "artifact_read", Arguments: `{"id":"` + m[1] + `/report/big.txt","offset":0,"limit":16384}`},
					llmtest.Call{ID: "r2", Name: "artifact_read", Arguments: `{"id":"` + m[1] + `/report/big.txt","offset":32768}`},
					llmtest.Call{ID: "r3", Name: "artifact_read", Arguments: `{"id":"no-such-id"}`},
				)
			default:
				mu.Lock()
				pages = res[1:]
				mu.Unlock()
				return llmtest.Reply("read")
			}
		case strings.HasPrefix(g, "CHILD"):
			if len(res) == 0 {
				m := stageRe.FindStringSubmatch(g)
				if m == nil {
					return llmtest.Reply("no staging dir in goal")
				}
				small, _ := json.Marshal(map[string]string{"path": m[1] + "/notes.txt", "content": "small artifact text"})
				big, _ := json.Marshal(map[string]string{"path": m[1] + "/report/big.txt", "content": bigText})
				return llmtest.CallTools(
					llmtest.Call{ID: "w1", Name: "write_file", Arguments: string(small)},
					llmtest.Call{ID: "w2", Name: "write_file", Arguments: string(big)},
				)
			}
			return llmtest.Reply("wrote two files")
		}
		return llmtest.Reply("?")
	})
	home := subHome(t, "")
	work := t.TempDir()
	out := runOdekEnv(t, srv.URL, work, []string{"ODEK_HOME=" + home, "ODEK_SUBAGENT_DEPTH=0"}, "subagent", "--goal", "PARENT artifacts")
	if out.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	// Metadata lines for both, content inlined for the small one only.
	for _, want := range []string{`[odek artifact] id="t1-`, `/notes.txt" media_type="text/plain`, "small artifact text", `/report/big.txt"`, "size_bytes=40960", "(read with artifact_read)"} {
		if !strings.Contains(delegated, want) {
			t.Errorf("delegate result lacks %q:\n%s", want, delegated)
		}
	}
	if strings.Contains(delegated, "0123456789abcdef0123") {
		t.Error("the 40 KiB artifact was inlined")
	}
	if len(pages) != 3 {
		t.Fatalf("pages %d", len(pages))
	}
	if !strings.Contains(pages[0], "bytes 0-16383 of 40960 (text); more remains: next offset 16384") {
		t.Errorf("page 1 header: %.200s", pages[0])
	}
	if !strings.Contains(pages[1], "bytes 32768-40959 of 40960 (text); end of artifact") {
		t.Errorf("page 2 header: %.200s", pages[1])
	}
	if !strings.Contains(pages[2], `unknown artifact id "no-such-id"; known ids: "t1-`) {
		t.Errorf("unknown id: %.300s", pages[2])
	}
	// Paths never reach the model.
	for _, req := range srv.Requests() {
		if bytes.Contains(req.Body, []byte(home)) || bytes.Contains(req.Body, []byte("file://")) {
			t.Fatalf("a request carries an artifact path or uri")
		}
	}
	// Files were moved into a 0700 per-task root; the staging dir is gone.
	roots, _ := filepath.Glob(filepath.Join(home, "artifacts", "*", "t1-*"))
	if len(roots) != 1 {
		t.Fatalf("artifact roots %v", roots)
	}
	fi, err := os.Stat(roots[0])
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("artifact root mode %v %v", fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(roots[0], "report", "big.txt")); err != nil || string(b) != bigText {
		t.Fatalf("moved artifact: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(work, ".odek", "stage", "*")); len(left) != 0 {
		t.Fatalf("staging left behind: %v", left)
	}
}

func TestSubagentChildSeesNoKeyAndDenialsReported(t *testing.T) {
	var mu sync.Mutex
	var childShell string
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		res := toolResults(r)
		switch {
		case strings.HasPrefix(g, "PARENT"):
			if len(res) == 0 {
				return delegateCall("CHILD inspect")
			}
			return llmtest.Reply("parent saw: " + res[0])
		case strings.HasPrefix(g, "CHILD"):
			if len(res) == 0 {
				return llmtest.CallTools(
					// The shell's parent is the child odek: dump its environment and argv.
					llmtest.Call{ID: "s1", Name: "shell", Arguments: `{"command":"tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' ' ' < /proc/$PPID/cmdline"}`},
					// Destructive is denied by the default policy, and reported.
					llmtest.Call{ID: "s2", Name: "shell", Arguments: `{"command":"rm -rf /tmp/definitely-not-here"}`},
				)
			}
			mu.Lock()
			childShell = res[0]
			mu.Unlock()
			return llmtest.Reply("inspected")
		}
		return llmtest.Reply("?")
	}).RequireAPIKey(testKey)
	home := subHome(t, `{"dangerous":{"classes":{"code_execution":"allow"}}}`)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + home, "ODEK_SUBAGENT_DEPTH=0"},
		"subagent", "--events-jsonl", evPath, "--goal", "PARENT inspect")
	if out.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(childShell, "ODEK_SUBAGENT_DEPTH=1") || !strings.Contains(childShell, "subagent --task") {
		t.Fatalf("could not inspect the child's environment/argv:\n%s", childShell)
	}
	if strings.Contains(childShell, testKey) || strings.Contains(childShell, "ODEK_API_KEY") {
		t.Fatalf("the API key is visible in the child's environment or argv:\n%s", childShell)
	}
	r := parseSub(t, out)
	if !strings.Contains(r.Summary, "denied: \"tool shell: class destructive denied by policy") {
		t.Errorf("parent model not told about the denial:\n%s", r.Summary)
	}
	evs := subEvents(t, evPath)
	var denied []events.Event
	for _, e := range evs {
		if e.Type == events.SubagentDenied {
			denied = append(denied, e)
		}
	}
	if len(denied) != 1 || denied[0].Data["class"] != "destructive" || num(denied[0].Data["task_index"]) != 0 {
		t.Fatalf("subagent_denied events %+v", denied)
	}
}

func TestSubagentSIGTERMLeavesNoOrphans(t *testing.T) {
	started := make(chan struct{}, 4)
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		if strings.HasPrefix(g, "PARENT") {
			return delegateCall("CHILD hang 1", "CHILD hang 2")
		}
		started <- struct{}{}
		return llmtest.Turn{Content: "never", Delay: time.Minute}
	})
	home := subHome(t, "")
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(t, ctx, srv.URL, t.TempDir(), "subagent", "--events-jsonl", evPath, "--goal", "PARENT hang")
	cmd.Env = append(cmd.Env, "ODEK_HOME="+home, "ODEK_SUBAGENT_DEPTH=0")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatalf("children never called the model\n%s", se.String())
		}
	}
	// The events reach the file asynchronously: poll (with a deadline)
	// until both subagent_spawned events are there.
	var pids []int
	for wait := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids = pids[:0]
		for _, e := range readEventsLoose(t, evPath) {
			if e.Type == events.SubagentSpawned {
				pids = append(pids, int(num(e.Data["pid"])))
			}
		}
		if len(pids) == 2 {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("spawned pids %v", pids)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for {
			// Neither the child nor anything in its process group is left.
			errP, errG := syscall.Kill(pid, 0), syscall.Kill(-pid, 0)
			if errors.Is(errP, syscall.ESRCH) && errors.Is(errG, syscall.ESRCH) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("child %d (or its group) still alive after the parent's SIGTERM", pid)
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
	}
	var r subResult
	if err := json.Unmarshal(so.Bytes(), &r); err != nil || r.Status == "success" {
		t.Fatalf("parent result %q %v", so.String(), err)
	}
}

// readEventsLoose reads the JSONL events written so far (the run is still
// going, so the stream has no closing event yet).
func readEventsLoose(t *testing.T, path string) []events.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if i == len(lines)-1 {
			break // empty after the final newline, or a line still being written
		}
		var e events.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// num reads a JSON number decoded either way (float64 or json.Number).
func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return -1
}

func TestSubagentPlanToolBlockAndEvents(t *testing.T) {
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		switch len(toolResults(r)) {
		case 0:
			return llmtest.CallTools(llmtest.Call{ID: "p1", Name: "plan", Arguments: `{"verb":"create","steps":[{"id":"a","title":"secret step title"},{"id":"b","title":"two"}]}`})
		case 1:
			return llmtest.CallTools(llmtest.Call{ID: "p2", Name: "plan", Arguments: `{"verb":"update","updates":[{"id":"a","status":"done","note":"secret note"}]}`})
		}
		return llmtest.Reply("planned")
	})
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + subHome(t, "")}, "subagent", "--events-jsonl", evPath, "--goal", "make a plan")
	if out.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	reqs := srv.Requests()
	if last := reqs[0].LastMessage(); last.Role != llm.RoleUser {
		t.Fatalf("plan block before any plan: %+v", last)
	}
	for i, want := range map[int]string{1: "[odek plan v1: 2 steps — 0 done", 2: "[odek plan v2: 2 steps — 1 done"} {
		if last := reqs[i].LastMessage(); last.Role != llm.RoleSystem || !strings.HasPrefix(last.Content, want) {
			t.Errorf("request %d last message %+v, want the plan block %q", i+1, last, want)
		}
	}
	evs := subEvents(t, evPath) // validated against the odek.event/v1 field table
	if count(evs, events.PlanCreated) != 1 || count(evs, events.PlanUpdated) != 1 {
		t.Fatalf("plan events: created %d updated %d", count(evs, events.PlanCreated), count(evs, events.PlanUpdated))
	}
	b, _ := os.ReadFile(evPath)
	if bytes.Contains(b, []byte("secret")) {
		t.Fatal("plan titles or notes leaked into events")
	}
}

// odek run itself offers plan, delegate_tasks and artifact_read, and a
// delegated child answers through the real binary.
func TestRunDelegatesToAChild(t *testing.T) {
	var mu sync.Mutex
	var parentReqs []llmtest.Recorded
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		switch {
		case strings.HasPrefix(g, "PARENT"):
			mu.Lock()
			parentReqs = append(parentReqs, r)
			mu.Unlock()
			if len(toolResults(r)) == 0 {
				return delegateCall("CHILD only")
			}
			return llmtest.Reply("parent saw: " + toolResults(r)[0])
		case strings.HasPrefix(g, "CHILD"):
			return llmtest.Reply("child finished")
		}
		return llmtest.Reply("?")
	}).RequireAPIKey(testKey)
	home := subHome(t, "")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{"ODEK_HOME=" + home}, "run", "--quiet", "PARENT delegate one task")
	if out.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", out.code, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stdout, "child finished") {
		t.Fatalf("answer does not carry the child's result:\n%s", out.stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"plan", "delegate_tasks", "artifact_read", "read_file"} {
		if !hasTool(parentReqs[0], name) {
			t.Errorf("odek run does not offer %s", name)
		}
	}
}
