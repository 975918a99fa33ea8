package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

func TestJobSessionID(t *testing.T) {
	valid := session.NewID()
	a := JobSessionID(queue.Job{ChatID: 1})
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
		got := JobSessionID(tc.job)
		if session.ValidateID(got) != nil || !tc.want(got) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

func TestResultExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&budget.ExceededError{Limit: budget.LimitToolCalls, Observed: 3, Max: 2}, 4},
		{fmt.Errorf("run: %w", context.Canceled), 130},
		{errors.New("model failed"), 1},
	} {
		if got := ResultExitCode(tc.err); got != tc.want {
			t.Errorf("ResultExitCode(%v) = %d, want %d", tc.err, got, tc.want)
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
	os.Symlink("/etc", filepath.Join(dir, "linkdir"))
	// A FIFO is skipped without blocking the worker.
	if err := syscall.Mkfifo(filepath.Join(dir, "sub", "pipe.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := CollectArtifacts(root, dir, time.Now().Add(-time.Minute), 10)
	if len(got) == 2 && got[0].SHA256 != "8a5d8b28d66ae90b5876fe0337b963d9f66ab1047f8c866ff4646b73a8a3aa41" {
		t.Errorf("report.md sha256 = %q", got[0].SHA256)
	}
	if len(got) != 2 || got[0].Path != "42/report.md" || got[0].Bytes != 4 || got[1].Path != "42/sub/data.json" || got[1].MIME != "application/json" {
		t.Fatalf("artifacts %+v", got)
	}
	if got := CollectArtifacts(root, dir, time.Now().Add(-time.Minute), 1); len(got) != 1 {
		t.Fatalf("max 1: %+v", got)
	}
}

func TestJobGoalOnTakeover(t *testing.T) {
	job := queue.Job{Goal: "build it", Attempt: 1}
	saved := []llm.Message{{Role: llm.RoleUser, Content: "earlier"}, {Role: llm.RoleAssistant, Content: "ok"},
		{Role: llm.RoleUser, Content: "build it"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c"}}}, {Role: llm.RoleTool, ToolCallID: "c"}}
	if got := JobGoal(job, saved); got != "build it" {
		t.Fatalf("first attempt: %q", got)
	}
	job.Attempt = 2
	if got := JobGoal(job, saved); got != ResumeNote {
		t.Fatalf("takeover after the goal was saved: %q, want the resume note", got)
	}
	if got := JobGoal(job, saved[:2]); got != "build it" {
		t.Fatalf("takeover before anything was saved: %q, want the goal", got)
	}
}

func TestJobRunnerStartPreparesSharedParts(t *testing.T) {
	cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1"}`, "")
	t.Chdir(t.TempDir())
	j := &JobRunner{Config: cfg, ArtifactsDir: "shared/art"}
	if err := j.Start(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if !filepath.IsAbs(j.ArtifactsDir) || j.LLM == nil || j.Extensions == nil {
		t.Fatalf("after Start: dir %q, LLM %v, extensions %v", j.ArtifactsDir, j.LLM, j.Extensions)
	}
	if fi, err := os.Stat(j.ArtifactsDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("artifacts dir: %v %v", fi, err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	bad := &JobRunner{Config: load(t, `{"model":"m1","base_url":"http://127.0.0.1:1","mcp_servers":{"gone":{"command":"/nonexistent/x","required":true}}}`, "")}
	if err := bad.Start(context.Background(), true); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("required server missing: %v", err)
	}
}

func TestJobRunnerRefusesToStartWithoutLandlock(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		abi          int
		wantErr      string
		wantActive   bool
	}{
		{"no Landlock", `{"sandbox":{}}`, 0, "Landlock is not enabled in this kernel", false},
		{"ABI without TCP rules", `{"sandbox":null}`, 3, "Linux 6.7 or newer", false},
		{"explicitly on", `{"sandbox":{"mode":"on"}}`, 1, "Landlock ABI 1 found, 4 needed", false},
		{"enough", `{"max_iterations":3}`, 4, "", true},
		{"opted out", `{"sandbox":{"mode":"off"}}`, 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1",`+strings.TrimPrefix(tc.config, "{"), "")
			var logs strings.Builder
			log := logrus.New()
			log.SetOutput(&logs)
			j := &JobRunner{Config: cfg, Logger: log, ArtifactsDir: t.TempDir(), SandboxABI: func() int { return tc.abi }}
			err := j.Start(context.Background(), false)
			defer j.Close()
			if tc.wantErr != "" {
				if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"mode": "off"`) {
					t.Fatalf("Start = %v, want ErrSandboxUnavailable saying %q and how to opt out", err, tc.wantErr)
				}
				// A runner that did not start runs no job.
				if _, rerr := j.Run(context.Background(), queue.Job{ID: "j", ChatID: 1, Goal: "x"}, nil, nil, nil); !errors.Is(rerr, errNotStarted) {
					t.Fatalf("Run after a failed Start = %v", rerr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := j.Sandbox()
			if st.Active != tc.wantActive || st.LandlockABI != tc.abi {
				t.Fatalf("status %+v", st)
			}
			if !tc.wantActive && !strings.Contains(logs.String(), "sandbox OFF") {
				t.Fatalf("no warning for an unconfined worker:\n%s", logs.String())
			}
		})
	}
}
