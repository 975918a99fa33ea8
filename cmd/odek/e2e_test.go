package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/events/eventstest"
	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

var odekBin string

// bins holds odekBin; helperBins the odek-sandbox that tests install
// beside a copy of it (never beside odekBin, which re-executes itself).
var bins, helperBins bintest.Set

func TestMain(m *testing.M) {
	odekBin = bins.MustBuild("github.com/odekrun/odek/cmd/odek")
	code := m.Run()
	bins.Remove()
	helperBins.Remove()
	os.Exit(code)
}

type runOut struct {
	stdout, stderr string
	code           int
}

// odek starts the binary in workdir with a clean, test-owned environment.
func odekCmd(t *testing.T, ctx context.Context, baseURL, workdir string, args ...string) *exec.Cmd {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, odekBin, args...)
	cmd.Dir = workdir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"ODEK_HOME=" + filepath.Join(home, ".odek"),
		"ODEK_BASE_URL=" + baseURL,
		"ODEK_MODEL=test-model",
		"ODEK_API_KEY=sk-test-key-0123456789abcdef",
	}
	return cmd
}

func runOdek(t *testing.T, baseURL, workdir string, args ...string) runOut {
	t.Helper()
	return runOdekEnv(t, baseURL, workdir, nil, args...)
}

// runOdekEnv is runOdek with extra environment entries, which win over the
// defaults (e.g. a fixed ODEK_HOME shared by several runs). odek runs in a
// session of its own, without a controlling terminal, so it can never stop
// at a prompt whatever terminal the tests were started from.
func runOdekEnv(t *testing.T, baseURL, workdir string, env []string, args ...string) runOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(t, ctx, baseURL, workdir, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	out := runOut{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		out.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out
}

func readEvents(t *testing.T, path string) []events.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("events file mode %v, want 0600", fi.Mode().Perm())
	}
	evs, err := eventstest.ValidateStream(f, eventstest.Options{})
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("events file invalid: %v\n%s", err, b)
	}
	return evs
}

func TestRunMultiStepWithParallelTools(t *testing.T) {
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(work, "b.txt"), []byte("beta\n"), 0o644)
	srv := llmtest.New(t,
		llmtest.CallTools(
			llmtest.Call{ID: "r1", Name: "read_file", Arguments: `{"path":"a.txt"}`},
			llmtest.Call{ID: "r2", Name: "read_file", Arguments: `{"path":"b.txt"}`},
		),
		llmtest.CallTools(llmtest.Call{ID: "w1", Name: "write_file", Arguments: `{"path":"out.txt","content":"alpha beta"}`}),
		llmtest.Reply("Both files read; wrote out.txt."),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdek(t, srv.URL, work, "run", "--events-jsonl", evPath, "read both files")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	if out.stdout != "Both files read; wrote out.txt.\n" {
		t.Fatalf("stdout %q", out.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != "alpha beta" {
		t.Fatalf("out.txt = %q, %v", b, err)
	}
	msgs := srv.Requests()[1].Messages
	if !strings.Contains(msgs[len(msgs)-2].Content, "alpha") || !strings.Contains(msgs[len(msgs)-1].Content, "beta") {
		t.Fatalf("tool results out of order: %+v", msgs[len(msgs)-2:])
	}
	evs := readEvents(t, evPath)
	var started, completed int
	for _, e := range evs {
		switch e.Type {
		case events.ToolCallStarted:
			started++
			sum, _ := e.Data["args_summary"].(map[string]any)
			if sum["path"] == nil || sum["class"] == nil {
				t.Fatalf("args_summary %v", e.Data["args_summary"])
			}
		case events.ToolCallCompleted:
			completed++
		}
	}
	if started != 3 || completed != 3 {
		t.Fatalf("started %d completed %d", started, completed)
	}
	if evs[0].Type != events.RunStarted || evs[len(evs)-1].Type != events.RunCompleted {
		t.Fatalf("first %s last %s", evs[0].Type, evs[len(evs)-1].Type)
	}
	if !strings.Contains(out.stderr, "read_file") {
		t.Fatalf("no progress on stderr: %q", out.stderr)
	}
}

func TestRunDeniesDangerousShell(t *testing.T) {
	work := t.TempDir()
	victim := filepath.Join(work, "keep.txt")
	os.WriteFile(victim, []byte("precious"), 0o644)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"rm -f keep.txt"}`}),
		llmtest.Reply("could not delete"),
	)
	out := runOdek(t, srv.URL, work, "run", "--quiet", "--json", "delete keep.txt")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatal("denied command ran:", err)
	}
	msgs := srv.Requests()[1].Messages
	if res := msgs[len(msgs)-1].Content; !strings.Contains(res, "destructive") {
		t.Fatalf("model was not told about the denial: %q", res)
	}
	var j map[string]any
	if err := json.Unmarshal([]byte(out.stdout), &j); err != nil {
		t.Fatalf("--json output %q: %v", out.stdout, err)
	}
	if j["status"] != "success" || j["answer"] != "could not delete" || len(j["run_id"].(string)) != 32 {
		t.Fatalf("json %v", j)
	}
	if out.stderr != "" {
		t.Fatalf("--quiet printed %q", out.stderr)
	}
}

func TestRunSIGTERMWritesRunFailed(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "thinking hard about this", StallAfterChunks: 1})
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(t, ctx, srv.URL, t.TempDir(), "run", "--quiet", "--events-jsonl", evPath, "stall")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the model call is in flight.
	for deadline := time.Now().Add(30 * time.Second); srv.Calls() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("odek never called the model")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("wait: %v (stderr %s)", err, se.String())
	}
	evs := readEvents(t, evPath)
	last := evs[len(evs)-1]
	if last.Type != events.RunFailed || last.Data["error_class"] != "context_canceled" {
		t.Fatalf("last event %+v", last)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"run", "--no-such-flag", "x"}, {"run"}, {"frobnicate"}} {
		out := runOdek(t, "http://127.0.0.1:1/v1", t.TempDir(), args...)
		if out.code != 3 || out.stderr == "" {
			t.Errorf("%v: exit %d stderr %q", args, out.code, out.stderr)
		}
	}
	out := runOdek(t, "http://127.0.0.1:1/v1", t.TempDir(), "version")
	if out.code != 0 || !strings.HasPrefix(out.stdout, "odek ") {
		t.Fatalf("version: %+v", out)
	}
}

func TestRunModelFailureExitsOne(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 401, ErrorMessage: "invalid key", ErrorCode: "invalid_api_key"})
	out := runOdek(t, srv.URL, t.TempDir(), "run", "--quiet", "hi")
	if out.code != 1 || !strings.Contains(out.stderr, "401") {
		t.Fatalf("exit %d stderr %q", out.code, out.stderr)
	}
	if strings.Contains(out.stderr, "sk-test-key") {
		t.Fatal("API key leaked on stderr")
	}
}

func TestRunBudgetExhaustedExitsFour(t *testing.T) {
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\n"), 0o644)
	srv := llmtest.New(t, llmtest.Turn{Content: "reading both", ToolCalls: []llmtest.Call{
		{ID: "r1", Name: "read_file", Arguments: `{"path":"a.txt"}`},
		{ID: "r2", Name: "read_file", Arguments: `{"path":"a.txt"}`},
	}})
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdek(t, srv.URL, work, "run", "--quiet", "--max-tool-calls", "1", "--events-jsonl", evPath, "read twice")
	if out.code != 4 {
		t.Fatalf("exit %d, want 4; stderr %s", out.code, out.stderr)
	}
	if out.stdout != "reading both\n" || !strings.Contains(out.stderr, "tool_calls") {
		t.Fatalf("stdout %q stderr %q", out.stdout, out.stderr)
	}
	evs := readEvents(t, evPath)
	n := len(evs)
	if evs[n-2].Type != events.BudgetExceeded || evs[n-2].Data["limit_name"] != "tool_calls" || evs[n-1].Type != events.RunFailed {
		t.Fatalf("closing events: %s, %s", evs[n-2].Type, evs[n-1].Type)
	}
}

func TestSessionRunThenContinue(t *testing.T) {
	work := t.TempDir()
	home := t.TempDir()
	srv := llmtest.New(t, llmtest.Reply("first answer"), llmtest.Reply("second answer"))
	run := func(args ...string) runOut {
		return runOdekEnv(t, srv.URL, work, []string{"ODEK_HOME=" + home}, args...)
	}
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	if bad := run("run", "--session", "--external-ref", "kind=CI,uri=x,created_by=y", "x"); bad.code != 3 || !strings.Contains(bad.stderr, "kind") {
		t.Fatalf("bad external ref: %+v", bad)
	}
	first := run("run", "--session", "--external-ref", "kind=ci-run,uri=https://ci.example.test/runs/1,created_by=ci", "--events-jsonl", evPath, "remember the number 42")
	if first.code != 0 || !strings.Contains(first.stderr, "odek: session ") {
		t.Fatalf("first run: %+v", first)
	}
	evs := readEvents(t, evPath)
	var saved bool
	for _, e := range evs {
		if e.Type == events.SessionSaved && e.SessionID != "" {
			saved = true
		}
	}
	if !saved {
		t.Fatal("no session_saved event with a session id")
	}
	second := run("continue", "--quiet", "what number?")
	if second.code != 0 || second.stdout != "second answer\n" {
		t.Fatalf("continue: %+v", second)
	}
	msgs := srv.Requests()[1].Messages
	var sawGoal bool
	for _, m := range msgs {
		if m.Content == "remember the number 42" {
			sawGoal = true
		}
	}
	if !sawGoal || msgs[len(msgs)-1].Content != "what number?" {
		t.Fatalf("continue did not resume the conversation: %+v", msgs)
	}
	list := run("session", "list")
	if list.code != 0 || strings.Count(list.stdout, "\n") != 1 {
		t.Fatalf("session list: %+v", list)
	}
	id := strings.Fields(list.stdout)[0]
	if show := run("session", "show", id); !strings.Contains(show.stdout, `"kind": "ci-run"`) {
		t.Fatalf("external ref not stored: %s", show.stdout)
	}
	if tr := run("session", "trim", "--keep", "0", id); tr.code != 0 || !strings.Contains(tr.stdout, "dropped") {
		t.Fatalf("session trim: %+v", tr)
	}
	bad := run("session", "show", "../../etc/passwd")
	if bad.code != 3 {
		t.Fatalf("path injection not refused: %+v", bad)
	}
}

func TestSessionSurvivesSIGTERMMidRun(t *testing.T) {
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\n"), 0o644)
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "r1", Name: "read_file", Arguments: `{"path":"a.txt"}`}),
		llmtest.Turn{Content: "still thinking", StallAfterChunks: 1},
		llmtest.Reply("resumed fine"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(t, ctx, srv.URL, work, "run", "--session", "--quiet", "read a.txt")
	home := strings.TrimPrefix(cmd.Env[2], "ODEK_HOME=")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); srv.Calls() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("second model call never came")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("wait: %v; stderr %s", err, se.String())
	}
	// The completed first step (goal, tool call, tool result) was saved.
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	cont := exec.CommandContext(cctx, odekBin, "continue", "--quiet", "go on")
	cont.Dir, cont.Env = work, append(append([]string(nil), cmd.Env...), "ODEK_HOME="+home)
	var cse bytes.Buffer
	cont.Stderr = &cse
	out, err := cont.Output()
	if err != nil || string(out) != "resumed fine\n" {
		t.Fatalf("continue: %q %v (model calls so far: %d)\nstderr: %s", out, err, srv.Calls(), cse.String())
	}
	msgs := srv.Requests()[2].Messages
	var sawResult bool
	for _, m := range msgs {
		if m.Role == "tool" && strings.Contains(m.Content, "alpha") {
			sawResult = true
		}
	}
	if !sawResult {
		t.Fatalf("saved step missing from the resumed conversation: %+v", msgs)
	}
}

func TestSIGTERMKillsToolSubprocesses(t *testing.T) {
	work := t.TempDir()
	srv := llmtest.New(t, llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell",
		Arguments: `{"command":"sleep 300 & echo $! > child.pid; wait"}`}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(t, ctx, srv.URL, work, "run", "--quiet", "sleep a while")
	home := strings.TrimPrefix(cmd.Env[2], "ODEK_HOME=")
	os.MkdirAll(home, 0o700)
	// The operator allows unknown commands (sleep, wait) for this test.
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"dangerous":{"classes":{"unknown":"allow","code_execution":"allow"}}}`), 0o600)
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(work, "child.pid")
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the shell tool never started; stderr %s", se.String())
		}
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			fmt.Sscan(string(b), &pid)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("wait: %v; stderr %s", err, se.String())
	}
	// The backgrounded grandchild must be gone (or a zombie awaiting its reaper).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool grandchild %d survived SIGTERM of odek: %s", pid, b)
		}
	}
}

// A plan made in one run is shown to the model again after odek continue.
func TestSessionKeepsThePlan(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "p1", Name: "plan", Arguments: `{"verb":"create","steps":[{"id":"s1","title":"survey the repository"},{"id":"s2","title":"write the summary"}]}`}),
		llmtest.Reply("planned"),
		llmtest.Reply("continuing"),
	)
	env := []string{"ODEK_HOME=" + home}
	if out := runOdekEnv(t, srv.URL, work, env, "run", "--session", "--quiet", "make a plan"); out.code != 0 {
		t.Fatalf("first run: %+v", out)
	}
	if out := runOdekEnv(t, srv.URL, work, env, "continue", "--quiet", "go on"); out.code != 0 || out.stdout != "continuing\n" {
		t.Fatalf("continue: %+v", out)
	}
	reqs := srv.Requests()
	var block string
	for _, m := range reqs[2].Messages {
		if strings.Contains(m.Content, "survey the repository") && m.Role == "system" {
			block = m.Content
		}
	}
	if block == "" || !strings.Contains(block, "write the summary") {
		t.Fatalf("the continued run does not show the saved plan: %+v", reqs[2].Messages)
	}
}
