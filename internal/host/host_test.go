package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/internal/subagent"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

// load writes the operator and project files (either may be "") and loads
// them with an environment that holds only what env gives.
func load(t *testing.T, operator, project string, env ...string) *config.Config {
	t.Helper()
	home, proj := t.TempDir(), t.TempDir()
	if operator != "" {
		if err := os.WriteFile(filepath.Join(home, config.OperatorFileName), []byte(operator), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if project != "" {
		if err := os.WriteFile(filepath.Join(proj, config.ProjectFileName), []byte(project), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _, err := config.Load(config.Options{Home: home, ProjectDir: proj, Environ: append([]string{}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestBuildRunsAgainstTheConfiguredEndpoint(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "done"})
	cfg := load(t, `{"model":"m1","base_url":"`+srv.URL+`","api_key":"sk-host-test-secret-123456"}`, "")
	var warns []string
	rt, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir(), Warn: func(w string) { warns = append(warns, w) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.Agent.Budget != rt.Budget || rt.Agent.Redactor != rt.Redactor {
		t.Fatal("Agent must share the runtime's budget tracker and redactor")
	}
	if got := rt.Redactor.String("key sk-host-test-secret-123456"); strings.Contains(got, "secret-123456") {
		t.Fatalf("the API key is not masked: %q", got)
	}
	res, err := agent.Run(context.Background(), rt.Agent, "hi")
	if err != nil || res.Answer != "done" {
		t.Fatalf("Run = %q, %v", res.Answer, err)
	}
	if len(warns) != 0 {
		t.Fatalf("unexpected warnings %q", warns)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestBuildLimits(t *testing.T) {
	cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1","limits":{"max_tool_calls":10,"max_runtime_seconds":60}}`,
		`{"limits":{"max_tool_calls":5}}`)
	rt, err := Build(context.Background(), Options{
		Config:         cfg,
		WorkDir:        t.TempDir(),
		LimitOverrides: budget.Limits{MaxInputTokens: 1000},
		AdjustLimits:   func(l *budget.Limits) { l.MaxRuntime = min(l.MaxRuntime, 30*time.Second) },
	})
	if err != nil {
		t.Fatal(err)
	}
	got := rt.Budget.Limits()
	want := budget.Limits{MaxToolCalls: 5, MaxRuntime: 30 * time.Second, MaxInputTokens: 1000}
	if got != want {
		t.Fatalf("limits = %+v, want %+v (project lowers, override adds, adjust last)", got, want)
	}
}

func TestBuildRejectsBadLimitsAndCollidingTools(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, config.OperatorFileName), []byte(`{"model":"m1","limits":{"max_tool_calls":-1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := config.Load(config.Options{Home: home, ProjectDir: t.TempDir(), Environ: []string{}}); err == nil || !strings.Contains(err.Error(), "limits.max_tool_calls") {
		t.Fatalf("negative limit: err = %v, want one naming limits.max_tool_calls", err)
	}
	cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1"}`, "")
	dup := tools.Builtins(tools.Options{})[0]
	_, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir(), ExtraTools: []tools.Tool{dup}})
	if err == nil || !strings.Contains(err.Error(), dup.Definition().Name) {
		t.Fatalf("colliding tool: err = %v, want one naming %q", err, dup.Definition().Name)
	}
	if _, err := Build(context.Background(), Options{}); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("nil config: %v", err)
	}
}

func TestContextSettings(t *testing.T) {
	cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1/v1","context_window":{"m1":100000},"context_share":0.9}`,
		`{"context_window":{"m1":50000},"context_share":0.5}`)
	rt, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.Agent.ContextWindow != 50000 || rt.Agent.ContextShare != 0.5 {
		t.Fatalf("window %d share %v, want the project's lower 50000 and 0.5", rt.Agent.ContextWindow, rt.Agent.ContextShare)
	}
}

// TestSectionDefaultsMatch: config's tighten rule compares a project's
// subagent values against the defaults its tags repeat; they must be
// subagent's own.
func TestSectionDefaultsMatch(t *testing.T) {
	typ := reflect.TypeOf(config.Subagent{})
	for name, want := range map[string]float64{
		"MaxConcurrency":     subagent.DefaultMaxConcurrency,
		"MaxDepth":           subagent.DefaultMaxDepth,
		"MaxProcesses":       subagent.DefaultMaxProcesses,
		"TaskTimeoutSeconds": subagent.DefaultTaskTimeout.Seconds(),
	} {
		f, _ := typ.FieldByName(name)
		if got, err := strconv.ParseFloat(f.Tag.Get("default"), 64); err != nil || got != want {
			t.Errorf("config.Subagent.%s default tag %q, subagent's default %v", name, f.Tag.Get("default"), want)
		}
	}
	if got := load(t, "", "").Subagent.WithDefaults(); got != (subagent.Settings{}).WithDefaults() {
		t.Errorf("the subagent section of no config = %+v", got)
	}
}

func TestPolicy(t *testing.T) {
	var d config.Dangerous
	if err := json.Unmarshal([]byte(`{"classes":{"code_execution":"allow"},"non_interactive":"deny"}`), &d); err != nil {
		t.Fatal(err)
	}
	p := d.Policy()
	if p.Classes[tools.ClassCodeExecution] != tools.Action("allow") || p.NonInteractive != tools.Action("deny") {
		t.Fatalf("policy = %+v", p)
	}
	if p.Classes[tools.ClassSafe] != tools.Action("allow") {
		t.Fatal("defaults lost")
	}
}

func toolSet(ts []tools.Tool) map[string]bool {
	m := map[string]bool{}
	for _, t := range ts {
		m[t.Definition().Name] = true
	}
	return m
}

func TestBuildOffersPlanDelegationAndExtensions(t *testing.T) {
	cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1","subagent":{"max_depth":2}}`, "")
	rt, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir(), Plan: true, Delegate: true, Extensions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	names := toolSet(rt.Agent.Tools)
	for _, want := range []string{"plan", "artifact_read", "delegate_tasks", "read_file", "shell"} {
		if !names[want] {
			t.Errorf("tool %q not offered; have %v", want, names)
		}
	}
	if rt.Agent.Plan == nil || rt.Artifacts == nil {
		t.Fatal("plan view or artifact store not set")
	}
	if len(rt.Extensions) != 0 || rt.Agent.RunStartedData != nil {
		t.Fatalf("no servers configured, yet a report: %+v", rt.Extensions)
	}

	// At the depth limit a run may not delegate further.
	rt2, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir(), Delegate: true, Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if names := toolSet(rt2.Agent.Tools); names["delegate_tasks"] || !names["artifact_read"] || names["plan"] {
		t.Fatalf("depth 2 of 2: tools %v", names)
	}
}

func TestBuildFailsOnARequiredExtensionThatCannotStart(t *testing.T) {
	cfg := load(t, `{"model":"m1","base_url":"http://127.0.0.1:1","mcp_servers":{"gone":{"command":"/nonexistent/odek-test-server","required":true}}}`, "")
	_, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir(), Extensions: true, ApproveMCP: true})
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err = %v, want one naming the required server", err)
	}
}

func TestSharedExtensionSetServesManyRuns(t *testing.T) {
	fx := mcptest.FixturePath(t)
	root := t.TempDir()
	cfg := load(t, fmt.Sprintf(`{"model":"m1","base_url":"http://127.0.0.1:1","mcp_servers":{"fx":{"command":%q,"args":["-root=%s"],"artifact_roots":[%q],"auto_approve":true}}}`, fx, root, root), "")
	set, err := LoadExtensions(context.Background(), Options{Config: cfg, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close(context.Background())

	var stores []*artifactstore.Store
	for range 2 {
		rt, err := Build(context.Background(), Options{Config: cfg, WorkDir: t.TempDir(), ExtensionSet: set, Plan: true, Delegate: true})
		if err != nil {
			t.Fatal(err)
		}
		var art tools.Tool
		for _, tl := range rt.Agent.Tools {
			if tl.Definition().Name == "fx__artifact_result" {
				art = tl
			}
		}
		if art == nil || rt.Agent.RunStartedData["mcp_servers"] == nil {
			t.Fatalf("shared set's tools or report missing: %v", toolSet(rt.Agent.Tools))
		}
		res, err := art.Run(context.Background(), json.RawMessage(`{"count":1}`))
		if err != nil || res.ArtifactCount != 1 {
			t.Fatalf("call: %+v, %v", res, err)
		}
		stores = append(stores, rt.Artifacts)
		// Closing a run must leave the shared servers up for the next.
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Each run registered its artifact in its own store only.
	for i, s := range stores {
		if ids := s.IDs(); len(ids) != 1 {
			t.Errorf("run %d store holds %v, want exactly its own artifact", i, ids)
		}
	}
}
