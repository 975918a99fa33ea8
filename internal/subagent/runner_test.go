package subagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/tools"
)

// TestRunTaskMaxRiskDenialsAndArtifacts runs a task in-process: max_risk
// safe denies a write (reported as a denial, never prompted), a staged
// file written by a permitted path comes back as a measured ref, and the
// model's first message says where to stage.
func TestRunTaskMaxRiskDenialsAndArtifacts(t *testing.T) {
	work := t.TempDir()
	root := filepath.Join(t.TempDir(), "root")
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		if r.LastMessage().Role == llm.RoleUser {
			return llmtest.CallTools(llmtest.Call{ID: "w", Name: "write_file", Arguments: `{"path":".odek/stage/t9/out.txt","content":"x"}`})
		}
		return llmtest.Reply("could not write")
	})
	client, _ := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	asked := false
	cfg := agent.Config{LLM: client, Model: "m", Tools: tools.Builtins(tools.Options{WorkDir: work}),
		Prompter: tools.PrompterFunc(func(context.Context, string) (bool, error) { asked = true; return true, nil })}
	res := subagent.RunTask(context.Background(), subagent.RunOptions{Agent: cfg, WorkDir: work,
		Task: subagent.Task{TaskID: "t9", Goal: "write it", MaxRisk: "safe", ArtifactRoot: root}})
	if asked {
		t.Fatal("a sub-agent prompted")
	}
	if res.Status != subagent.StatusSuccess || res.Summary != "could not write" || res.ExitCode() != 0 {
		t.Fatalf("result %+v", res)
	}
	if len(res.Denials) != 1 || res.Denials[0].Class != "local_write" || res.Denials[0].Tool != "write_file" ||
		!strings.Contains(res.Denials[0].Reason, "dangerous.classes.local_write=deny") {
		t.Fatalf("denials %+v", res.Denials)
	}
	if len(res.Artifacts) != 0 {
		t.Fatalf("a denied write produced artifacts: %+v", res.Artifacts)
	}
	if first := srv.Requests()[0].Messages[1].Content; !strings.Contains(first, "write them under .odek/stage/t9/") {
		t.Fatalf("first message %q", first)
	}

	// Without max_risk the write runs and the runner returns the file.
	res = subagent.RunTask(context.Background(), subagent.RunOptions{Agent: cfg, WorkDir: work,
		Task: subagent.Task{TaskID: "t9", Goal: "write it", ArtifactRoot: root}})
	if res.Status != subagent.StatusSuccess || len(res.Artifacts) != 1 || res.Artifacts[0].ID != "out.txt" || *res.Artifacts[0].SizeBytes != 1 {
		t.Fatalf("result %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(root, "out.txt")); err != nil || string(b) != "x" {
		t.Fatalf("moved file %q %v", b, err)
	}
}

func TestRunTaskMaxIterationsIsPartial(t *testing.T) {
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		return llmtest.Turn{Content: "still going", ToolCalls: []llmtest.Call{{Name: "list_dir", Arguments: `{"path":"."}`}}}
	})
	client, _ := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	cfg := agent.Config{LLM: client, Model: "m", MaxIterations: 2, Tools: tools.Builtins(tools.Options{WorkDir: t.TempDir()})}
	res := subagent.RunTask(context.Background(), subagent.RunOptions{Agent: cfg, Task: subagent.Task{Goal: "loop"}})
	if res.Status != subagent.StatusPartial || res.ExitCode() != 1 || res.Iterations != 2 || res.ToolCalls != 2 || !strings.Contains(res.Error, "max iterations") {
		t.Fatalf("result %+v", res)
	}
}
