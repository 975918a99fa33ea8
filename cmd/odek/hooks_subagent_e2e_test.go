package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/internal/llm/llmtest"
)

// subagent_start and subagent_stop hooks fire in delegate_tasks (a
// subagent_start hook that exits 2 refuses the task: no child starts and
// the model sees the reason), and the lifecycle hooks fire in the
// `odek subagent` child as in any run — all through the real binary and
// real child processes, with hook_* events in the parent's stream.
func TestHooksAroundSubagents(t *testing.T) {
	var mu sync.Mutex // guards forbiddenCalls
	hookSrv := startHookRecorder(t)
	dir := t.TempDir()
	block := filepath.Join(dir, "block.sh")
	os.WriteFile(block, []byte("#!/bin/sh\ngrep -q FORBIDDEN && { echo 'no forbidden work' >&2; exit 2; }\nexit 0\n"), 0o755)
	home, homeEnv := extOdekHome(t, `{}`)
	cfg := fmt.Sprintf(`{"dangerous":{"classes":{"destructive":"allow","code_execution":"allow","local_write":"allow"}},
	  "hooks":{"subagent_start":[{"command":[%q]},{"url":%q}],
	           "subagent_stop":[{"url":%q}],
	           "session_start":[{"url":%q}]}}`, block, hookSrv.URL, hookSrv.URL, hookSrv.URL)
	os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600)

	var forbiddenCalls int
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		g := goalOf(r)
		switch {
		case strings.HasPrefix(g, "PARENT"):
			if res := toolResults(r); len(res) > 0 {
				return llmtest.Reply("parent saw: " + res[0])
			}
			return delegateCall("CHILD ok", "CHILD FORBIDDEN")
		case strings.Contains(g, "FORBIDDEN"):
			mu.Lock()
			forbiddenCalls++
			mu.Unlock()
		}
		return llmtest.Reply("done")
	})
	evPath := filepath.Join(t.TempDir(), "ev.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "--json", "--events-jsonl", evPath, "PARENT delegate")
	if out.code != 0 {
		t.Fatalf("exit %d: %s", out.code, out.stderr)
	}
	if !strings.Contains(out.stdout, "blocked by a subagent_start hook: no forbidden work") {
		t.Fatalf("the model did not see the refusal: %s", out.stdout)
	}
	mu.Lock()
	n := forbiddenCalls
	mu.Unlock()
	if n != 0 {
		t.Fatalf("the refused task's child ran (%d model calls)", n)
	}
	seen := hookSrv.inputs()
	var starts, stops, childSessions, parentSessions int
	for _, in := range seen {
		prompt := fmt.Sprint(in["prompt"])
		switch in["event"] {
		case "subagent_start":
			starts++
			if prompt != "CHILD ok" || in["task_id"] == nil || in["run_id"] == nil {
				t.Errorf("subagent_start input: %v", in)
			}
		case "subagent_stop":
			stops++
			if prompt != "CHILD ok" || in["status"] != "success" || in["answer"] != "done" {
				t.Errorf("subagent_stop input: %v", in)
			}
		case "session_start":
			if strings.HasPrefix(prompt, "PARENT") {
				parentSessions++
			} else if strings.HasPrefix(prompt, "CHILD ok") {
				childSessions++
			}
		}
	}
	// The refused task got its subagent_start (from the command hook, which
	// blocked it before the HTTP hook) and no subagent_stop.
	if starts != 1 || stops != 1 || parentSessions != 1 || childSessions != 1 {
		t.Fatalf("hook inputs: %d starts, %d stops, %d parent and %d child session_start: %v", starts, stops, parentSessions, childSessions, seen)
	}
	ev, _ := os.ReadFile(evPath)
	if !strings.Contains(string(ev), `"type":"hook_blocked"`) || !strings.Contains(string(ev), `"event":"subagent_start"`) || !strings.Contains(string(ev), `"event":"subagent_stop"`) {
		t.Fatalf("no subagent hook_* events in the parent's stream:\n%s", ev)
	}
	// The lifecycle hook's report is in the stream too, after run_started
	// and before the first model call's events.
	started, hook, llm := strings.Index(string(ev), `"type":"run_started"`), strings.Index(string(ev), `"event":"session_start"`), strings.Index(string(ev), `"type":"tool_call_started"`)
	if started < 0 || hook < started || llm < hook {
		t.Fatalf("session_start hook event out of place (run_started %d, hook %d, first tool call %d):\n%s", started, hook, llm, ev)
	}
}
