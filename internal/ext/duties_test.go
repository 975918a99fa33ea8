package ext_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/artifactstore"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/tools"
)

func toolNamed(t *testing.T, ts []tools.Tool, name string) tools.Tool {
	t.Helper()
	for _, tl := range ts {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func run(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	r, err := tl.Run(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// isError results reach the model framed as errors, inside the untrusted
// boundary, naming server and tool.
func TestIsErrorReachesTheModelAsAnError(t *testing.T) {
	set, err := load(t, ext.Options{Servers: layers(t, `{"fx":`+entry(t, `"auto_approve":true`)+`}`, "")})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, toolNamed(t, set.Tools(), "fx__error_result"), `{"text":"disk full"}`)
	start := strings.Index(r.Text, "<<<odek-untrusted")
	framing := strings.Index(r.Text, `[odek tool error] server "fx" tool "error_result" reported a failure`)
	end := strings.Index(r.Text, "<<<end odek-untrusted")
	if !r.IsError || start < 0 || framing < start || end < framing || !strings.Contains(r.Text[framing:end], "disk full") {
		t.Fatalf("isError result:\n%s", r.Text)
	}
}

func TestProgressSignalsAndRoots(t *testing.T) {
	var mu sync.Mutex
	var got []ext.ToolProgress
	dir := t.TempDir()
	set, err := load(t, ext.Options{
		Servers:    layers(t, `{"fx":`+entry(t, `"auto_approve":true`, "-chaos")+`}`, ""),
		Roots:      func() []string { return []string{dir} },
		OnProgress: func(p ext.ToolProgress) { mu.Lock(); got = append(got, p); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, toolNamed(t, set.Tools(), "fx__progress"), `{"steps":5}`)
	mu.Lock()
	// Rate limited: five notifications within far less than
	// ProgressInterval make one signal.
	if len(got) != 1 || got[0].Tool != "fx__progress" || got[0].Server != "fx" || got[0].MCPTool != "progress" || got[0].Progress != 1 || got[0].Total != 5 {
		t.Fatalf("progress signals %+v", got)
	}
	if d := got[0].Data(); d["tool"] != "fx__progress" || d["total"] != 5.0 || d["message"] != "step 1[31m" {
		t.Fatalf("event data %v", d)
	}
	mu.Unlock()
	r := run(t, toolNamed(t, set.Tools(), "fx__server_request"), `{"method":"roots/list"}`)
	if !strings.Contains(r.Text, `"uri":"file://`+dir+`"`) {
		t.Fatalf("roots/list answer: %s", r.Text)
	}
}

// notifications/tools/list_changed: odek re-lists, and the model is told
// on its next MCP tool result, once per group of tools (one job).
func TestToolsListChangedToldToTheModel(t *testing.T) {
	var wmu sync.Mutex
	var warns []string
	set, err := load(t, ext.Options{
		Servers: layers(t, `{"fx":`+entry(t, `"auto_approve":true`, "-chaos")+`}`, ""),
		Warn:    func(s string) { wmu.Lock(); warns = append(warns, s); wmu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	job := set.ToolsFor(nil)
	changed := run(t, toolNamed(t, job, "fx__change_tools"), `{"mode":"remove_echo"}`)
	notice := `[odek] MCP server "fx" changed its tools — removed: echo`
	// The re-list runs in the background: once the operator was warned,
	// the change is on the board (it is added first), and the job's next
	// MCP result must carry it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		wmu.Lock()
		warned := strings.Contains(strings.Join(warns, "\n"), "removed: echo")
		wmu.Unlock()
		if warned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool-list change was not noticed within 30s")
		}
	}
	// The server sends list_changed before it answers change_tools, so the
	// re-list may finish first and the notice ride on that very result;
	// otherwise it comes with the next one. Either way once.
	r := changed
	if !strings.Contains(r.Text, notice) {
		r = run(t, toolNamed(t, job, "fx__stats"), `{}`)
	}
	if !strings.Contains(r.Text, notice) || strings.Index(r.Text, notice) < strings.Index(r.Text, "<<<end odek-untrusted") {
		t.Fatalf("the model was not told (outside the boundary):\n%s", r.Text)
	}
	if again := run(t, toolNamed(t, job, "fx__stats"), `{}`); strings.Contains(again.Text, notice) {
		t.Fatalf("told twice:\n%s", again.Text)
	}
	// Another job sharing the Set is told too.
	if other := run(t, toolNamed(t, set.ToolsFor(nil), "fx__stats"), `{}`); !strings.Contains(other.Text, notice) {
		t.Fatalf("another job not told:\n%s", other.Text)
	}
	// The per-turn path (agent.Config.Notices) shares the count: a job
	// told through its MCP result is not told again before its next call,
	// and a job not told yet hears it there first, once.
	if n := ext.Notices(job); n == nil || n() != "" {
		t.Fatalf("a job already told is told again")
	}
	fresh := set.ToolsFor(nil)
	n := ext.Notices(fresh)
	if got := n(); !strings.Contains(got, notice) {
		t.Fatalf("per-turn notice %q", got)
	}
	if got := n(); got != "" {
		t.Fatalf("per-turn notice told twice: %q", got)
	}
	if r := run(t, toolNamed(t, fresh, "fx__stats"), `{}`); strings.Contains(r.Text, notice) {
		t.Fatalf("told again on the MCP result after the per-turn notice:\n%s", r.Text)
	}
	echo := run(t, toolNamed(t, job, "fx__echo"), `{"text":"x"}`)
	if !echo.IsError || !strings.Contains(echo.Text, "no longer lists it") {
		t.Fatalf("removed tool: %+v", echo)
	}
	wmu.Lock()
	defer wmu.Unlock()
	if len(warns) == 0 || !strings.Contains(strings.Join(warns, "\n"), "removed: echo") {
		t.Fatalf("operator not warned: %q", warns)
	}
}

// A resource_link inside artifact_roots is readable with artifact_read.
func TestResourceLinkRegisteredForArtifactRead(t *testing.T) {
	root := t.TempDir()
	store := &artifactstore.Store{}
	set, err := load(t, ext.Options{
		Servers:   layers(t, `{"fx":`+entry(t, `"auto_approve":true,"artifact_roots":[`+strconv.Quote(root)+`]`, "-chaos", "-root="+root)+`}`, ""),
		Artifacts: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, toolNamed(t, set.Tools(), "fx__link_result"), `{}`)
	if !strings.Contains(r.Text, "artifact_read: notes.txt → fx/notes.txt") || r.ArtifactCount != 1 {
		t.Fatalf("link not registered:\n%s", r.Text)
	}
	if ref, ok := store.Lookup("fx/notes.txt"); !ok || ref.SizeBytes != 64 || !strings.HasPrefix(ref.Path, root) {
		t.Fatalf("store entry %+v %v", ref, ok)
	}
}
