package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
)

func TestJobSessionID(t *testing.T) {
	valid := session.NewID()
	a := jobSessionID(queue.Job{ChatID: 1})
	for _, tc := range []struct {
		name string
		job  queue.Job
		want func(string) bool
	}{
		{"valid session id is used as is", queue.Job{ChatID: 1, SessionID: valid}, func(s string) bool { return s == valid }},
		{"chat derived, stable", queue.Job{ChatID: 1}, func(s string) bool { return s == a }},
		{"other chat differs", queue.Job{ChatID: 2}, func(s string) bool { return s != a }},
		{"named session differs from the chat's", queue.Job{ChatID: 1, SessionID: "topic-7"}, func(s string) bool { return s != a }},
		{"path-like name is hashed", queue.Job{ChatID: 1, SessionID: "../../etc"}, func(s string) bool { return session.ValidateID(s) == nil }},
	} {
		got := jobSessionID(tc.job)
		if session.ValidateID(got) != nil || !tc.want(got) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

func TestResultCodes(t *testing.T) {
	for _, tc := range []struct {
		res  queue.Result
		want int
	}{
		{queue.Result{Status: queue.StatusSucceeded}, 0},
		{queue.Result{Status: queue.StatusCanceled}, 130},
		{queue.Result{Status: queue.StatusFailed, ExitCode: 4}, 4},
		{queue.Result{Status: queue.StatusFailed}, 1},
		{queue.Result{Status: queue.StatusDeadLettered}, 1},
	} {
		if got := resultCode(tc.res); got != tc.want {
			t.Errorf("resultCode(%+v) = %d, want %d", tc.res, got, tc.want)
		}
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&budget.ExceededError{Limit: budget.LimitToolCalls, Observed: 3, Max: 2}, 4},
		{fmt.Errorf("run: %w", context.Canceled), 130},
		{errors.New("model failed"), 1},
	} {
		if got := resultExitCode(tc.err); got != tc.want {
			t.Errorf("resultExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestCollectArtifacts(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "42")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o700)
	old := filepath.Join(dir, "old.txt")
	os.WriteFile(old, []byte("old"), 0o600)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	os.WriteFile(filepath.Join(dir, "report.md"), []byte("# hi"), 0o600)
	os.WriteFile(filepath.Join(dir, "sub", "data.json"), []byte("{}"), 0o600)
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	got := collectArtifacts(root, dir, time.Now().Add(-time.Minute), 10)
	if len(got) != 2 || got[0].Path != "42/report.md" || got[0].Bytes != 4 || got[1].Path != "42/sub/data.json" || got[1].MIME != "application/json" {
		t.Fatalf("artifacts %+v", got)
	}
	if got := collectArtifacts(root, dir, time.Now().Add(-time.Minute), 1); len(got) != 1 {
		t.Fatalf("max 1: %+v", got)
	}
}

func TestJobGoalOnTakeover(t *testing.T) {
	job := queue.Job{Goal: "build it", Attempt: 1}
	saved := []llm.Message{{Role: llm.RoleUser, Content: "earlier"}, {Role: llm.RoleAssistant, Content: "ok"},
		{Role: llm.RoleUser, Content: "build it"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c"}}}, {Role: llm.RoleTool, ToolCallID: "c"}}
	if got := jobGoal(job, saved); got != "build it" {
		t.Fatalf("first attempt: %q", got)
	}
	job.Attempt = 2
	if got := jobGoal(job, saved); got != resumeNote {
		t.Fatalf("takeover after the goal was saved: %q, want the resume note", got)
	}
	if got := jobGoal(job, saved[:2]); got != "build it" {
		t.Fatalf("takeover before anything was saved: %q, want the goal", got)
	}
}
