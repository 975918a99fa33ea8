package subagent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/tools"
)

// odekBin is the real odek binary, built once: children are real
// processes.
var odekBin string

func TestMain(m *testing.M) {
	var bins bintest.Set
	odekBin = bins.MustBuild("github.com/odekrun/odek/cmd/odek")
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// childEnviron is a clean environment for children pointed at url.
func childEnviron(t testing.TB, url string) []string {
	home := filepath.Join(t.TempDir(), ".odek")
	os.MkdirAll(home, 0o700)
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(home), "ODEK_HOME=" + home,
		"ODEK_BASE_URL=" + url, "ODEK_MODEL=test-model"}
}

func firstUser(r llmtest.Recorded) string {
	for _, m := range r.Messages {
		if m.Role == llm.RoleUser {
			return m.Content
		}
	}
	return ""
}

// TestParentBudgetCountsChildren: the parent's tracker ends up with its
// own usage plus every child's tokens and tool calls.
func TestParentBudgetCountsChildren(t *testing.T) {
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		hasTool := false
		for _, m := range r.Messages {
			hasTool = hasTool || m.Role == llm.RoleTool
		}
		switch {
		case strings.HasPrefix(firstUser(r), "PARENT") && !hasTool:
			return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "delegate_tasks", Arguments: `{"tasks":[{"goal":"CHILD 1"},{"goal":"CHILD 2"}]}`}},
				Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 10}}
		case strings.HasPrefix(firstUser(r), "CHILD") && !hasTool:
			return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "list_dir", Arguments: `{"path":"."}`}},
				Usage: &llm.Usage{PromptTokens: 1000, CompletionTokens: 1}}
		}
		return llmtest.Turn{Content: "ok", Usage: &llm.Usage{PromptTokens: 7, CompletionTokens: 3}}
	})
	client, err := llm.New(llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	tracker := budget.NewTracker(budget.Limits{MaxToolCalls: 100}, budget.Prices{}, false, time.Now())
	d := subagent.NewDelegateTool(subagent.Options{Executable: odekBin, Environ: childEnviron(t, srv.URL), WorkDir: t.TempDir(),
		ArtifactsDir: t.TempDir(), Store: &artifactstore.Store{}, Settings: subagent.Settings{BudgetInherit: subagent.InheritShare}})
	res, err := agent.Run(context.Background(), agent.Config{LLM: client, Model: "m", Tools: []tools.Tool{d}, Budget: tracker}, "PARENT go")
	if err != nil {
		t.Fatal(err)
	}
	u := tracker.Snapshot()
	// parent: 100+7 input; children: 2 × (1000+7) input, 2 × 1 list_dir call.
	if res.Usage.PromptTokens != 107 || u.InputTokens != 107+2*1007 || u.OutputTokens != 13+2*4 || u.ToolCalls != 1+2 {
		t.Fatalf("parent usage %+v, tracker %+v", res.Usage, u)
	}
}

// BenchmarkSpawnToFirstRequest measures the time from delegate_tasks
// starting a child to the fake LLM receiving that child's first request:
// process start, config load, host assembly and the request itself.
func BenchmarkSpawnToFirstRequest(b *testing.B) {
	var arrived atomic.Int64
	srv := llmtest.NewHandler(b, func(r llmtest.Recorded) llmtest.Turn {
		arrived.CompareAndSwap(0, time.Now().UnixNano())
		return llmtest.Reply("ok")
	})
	d := subagent.NewDelegateTool(subagent.Options{Executable: odekBin, Environ: childEnviron(b, srv.URL), WorkDir: b.TempDir(), Emit: nopEmit})
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		arrived.Store(0)
		start := time.Now()
		if res, err := d.Run(context.Background(), json.RawMessage(`{"tasks":[{"goal":"x"}]}`)); err != nil || res.IsError {
			b.Fatalf("%+v %v", res, err)
		}
		total += time.Duration(arrived.Load() - start.UnixNano())
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "spawn-to-request-ms")
}

// BenchmarkParentOverhead8Children runs one delegate_tasks call with 8
// children (max_concurrency 8) that answer at once, and reports the
// parent's own CPU time per call (children excluded).
func BenchmarkParentOverhead8Children(b *testing.B) {
	srv := llmtest.NewHandler(b, func(r llmtest.Recorded) llmtest.Turn { return llmtest.Reply("ok") })
	d := subagent.NewDelegateTool(subagent.Options{Executable: odekBin, Environ: childEnviron(b, srv.URL), WorkDir: b.TempDir(),
		Emit: nopEmit, Settings: subagent.Settings{MaxConcurrency: 8}})
	args := json.RawMessage(`{"tasks":[` + strings.TrimSuffix(strings.Repeat(`{"goal":"x"},`, 8), ",") + `]}`)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for b.Loop() {
		if res, err := d.Run(context.Background(), args); err != nil || res.IsError {
			b.Fatalf("%+v %v", res, err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "parent-cpu-ms/op")
}

func nopEmit(context.Context, events.Type, map[string]any) {}
