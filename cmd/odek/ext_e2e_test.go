package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

// extOdekHome writes an operator config.json with the given mcp_servers
// section into a fresh ODEK_HOME and returns the env entry selecting it.
func extOdekHome(t *testing.T, servers string) (string, string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), ".odek")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"mcp_servers":` + servers + `}`
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, "ODEK_HOME=" + home
}

var extUntrusted = regexp.MustCompile(`(?s)<<<odek-untrusted nonce=([0-9a-f]{32}) source="fx__artifact_result">>>\n.*\n<<<end odek-untrusted nonce=([0-9a-f]{32})>>>`)

func extHasTool(specs []string, name string) bool {
	for _, s := range specs {
		if s == name {
			return true
		}
	}
	return false
}

func extToolNames(rec llmtest.Recorded) []string {
	var out []string
	for _, s := range rec.Tools {
		out = append(out, s.Function.Name)
	}
	return out
}

func TestRunCallsMCPToolWithArtifacts(t *testing.T) {
	fx := mcptest.FixturePath(t)
	root := t.TempDir()
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"fx":{"command":%q,"args":["-root=%s"],"artifact_roots":[%q],"auto_approve":true}}`, fx, root, root))
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "m1", Name: "fx__artifact_result", Arguments: `{"count":1,"summary":"the report","text":"Report written."}`}),
		llmtest.CallTools(llmtest.Call{ID: "m2", Name: "artifact_read", Arguments: `{"id":"fx/art-1","limit":100}`}),
		llmtest.Reply("The report is attached."),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "--events-jsonl", evPath, "write the report")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	if !strings.Contains(out.stderr, `MCP server "fx" (operator): loaded with 6 tools`) {
		t.Errorf("no start-up report on stderr:\n%s", out.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	// The envelope's artifact is readable by id through artifact_read.
	if read := reqs[2].LastMessage(); !strings.Contains(read.Content, "artifact 1 line") || strings.Contains(read.Content, root) {
		t.Errorf("artifact_read of the MCP artifact:\n%s", read.Content)
	}
	if names := extToolNames(reqs[0]); !extHasTool(names, "fx__echo") || !extHasTool(names, "fx__artifact_result") || !extHasTool(names, "read_file") {
		t.Fatalf("the model was not offered the MCP tools: %v", names)
	}
	msg := reqs[1].LastMessage()
	m := extUntrusted.FindStringSubmatch(msg.Content)
	if msg.Role != "tool" || m == nil || m[1] != m[2] {
		t.Fatalf("tool result not inside a nonce'd boundary:\n%+v", msg)
	}
	if !strings.Contains(msg.Content, "Report written.") || !strings.Contains(msg.Content, `[odek artifact] id="art-1" media_type="text/plain" size_bytes=1024 sha256=`) ||
		!strings.Contains(msg.Content, `summary="the report"`) || strings.Contains(msg.Content, root) ||
		!strings.Contains(msg.Content, "artifact_read: art-1 → fx/art-1") {
		t.Fatalf("tool result lacks the text or the artifact metadata line, or shows the path:\n%s", msg.Content)
	}

	evs := readEvents(t, evPath)
	var completed, started bool
	for _, e := range evs {
		switch {
		case e.Type == events.RunStarted:
			b, _ := json.Marshal(e.Data["mcp_servers"])
			if !strings.Contains(string(b), `"name":"fx"`) || !strings.Contains(string(b), `"status":"loaded"`) {
				t.Errorf("run_started lacks the MCP server report: %s", b)
			}
			started = true
		case e.Type == events.ToolCallCompleted && e.Tool == "fx__artifact_result":
			if fmt.Sprint(e.Data["artifact_count"]) != "1" {
				t.Errorf("artifact_count %v, want 1", e.Data["artifact_count"])
			}
			completed = true
		}
	}
	if !started || !completed {
		t.Fatalf("run_started %v, tool_call_completed %v in %d events", started, completed, len(evs))
	}
}

func TestRunRequiredMCPServerFailsWithExit3(t *testing.T) {
	fx := mcptest.FixturePath(t)
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"broken":{"command":%q,"args":["-mode=exit-initialize"],"required":true,"auto_approve":true}}`, fx))
	srv := llmtest.New(t, llmtest.Reply("never asked"))
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "hello")
	if out.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr: %s", out.code, out.stderr)
	}
	if !strings.Contains(out.stderr, `"broken"`) || !strings.Contains(out.stderr, "required MCP server") {
		t.Fatalf("stderr does not name the required server:\n%s", out.stderr)
	}
	if srv.Calls() != 0 {
		t.Fatalf("the model was called %d times", srv.Calls())
	}

	// The same server, optional: reported, and the run goes on.
	_, homeEnv = extOdekHome(t, fmt.Sprintf(`{"broken":{"command":%q,"args":["-mode=exit-initialize"],"auto_approve":true}}`, fx))
	srv = llmtest.New(t, llmtest.Reply("fine"))
	out = runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "hello")
	if out.code != 0 || out.stdout != "fine\n" || !strings.Contains(out.stderr, `MCP server "broken" (operator): failed:`) {
		t.Fatalf("optional failure: exit %d\nstdout %q\nstderr: %s", out.code, out.stdout, out.stderr)
	}
}

func TestRunProjectMCPServerNeedsApproval(t *testing.T) {
	fx := mcptest.FixturePath(t)
	work := t.TempDir()
	proj := fmt.Sprintf(`{"mcp_servers":{"fx":{"command":%q,"auto_approve":true}}}`, fx)
	if err := os.WriteFile(filepath.Join(work, "odek.json"), []byte(proj), 0o644); err != nil {
		t.Fatal(err)
	}
	home, homeEnv := extOdekHome(t, `{}`)

	// No terminal, no grant: not loaded, and stderr says how to approve.
	srv := llmtest.New(t, llmtest.Reply("ok"))
	out := runOdekEnv(t, srv.URL, work, []string{homeEnv}, "run", "hello")
	if out.code != 0 || !strings.Contains(out.stderr, `MCP server "fx" (project): skipped: not approved`) || !strings.Contains(out.stderr, "ODEK_APPROVE_MCP=1") {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	if !strings.Contains(out.stderr, "auto_approve is ignored in the project file") {
		t.Errorf("no warning about the project's auto_approve:\n%s", out.stderr)
	}
	if extHasTool(extToolNames(srv.Requests()[0]), "fx__echo") {
		t.Fatal("an unapproved project server's tool reached the model")
	}

	// ODEK_APPROVE_MCP=1: loaded for this invocation; the call runs.
	srv = llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "e1", Name: "fx__echo", Arguments: `{"text":"from the project server"}`}),
		llmtest.Reply("echoed"),
	)
	out = runOdekEnv(t, srv.URL, work, []string{homeEnv, "ODEK_APPROVE_MCP=1"}, "run", "echo something")
	if out.code != 0 || out.stdout != "echoed\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	if c := srv.Requests()[1].LastMessage().Content; !strings.Contains(c, "from the project server") || !strings.Contains(c, "<<<odek-untrusted nonce=") {
		t.Fatalf("tool result %q", c)
	}
	if _, err := os.Stat(filepath.Join(home, "approvals.json")); !os.IsNotExist(err) {
		t.Fatal("ODEK_APPROVE_MCP=1 was remembered in approvals.json")
	}

	// odek ext approve --yes remembers the answers; later runs load the
	// server without a terminal or ODEK_APPROVE_MCP.
	out = runOdekEnv(t, "", work, []string{homeEnv}, "ext", "approve", "--yes")
	if out.code != 0 || !strings.Contains(out.stdout, `MCP server "fx" (project): loaded with 6 tools`) {
		t.Fatalf("ext approve: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	srv = llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "e2", Name: "fx__echo", Arguments: `{"text":"approved ahead"}`}),
		llmtest.Reply("done"),
	)
	out = runOdekEnv(t, srv.URL, work, []string{homeEnv}, "run", "echo again")
	if out.code != 0 || !strings.Contains(srv.Requests()[1].LastMessage().Content, "approved ahead") {
		t.Fatalf("run after ext approve: exit %d\n%s", out.code, out.stderr)
	}
}

// Issue 30, through the real binary: with max_result_chars 2000, an
// envelope's text is measured and cut alone; its refs' metadata lines
// follow it whole, outside the limit; the notice names the text's length as
// the tool produced it. Plain text results keep the same rule.
func TestRunEnvelopeTextAloneCountsAgainstMaxResultChars(t *testing.T) {
	fx := mcptest.FixturePath(t)
	root := t.TempDir()
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"fx":{"command":%q,"args":["-root=%s"],"artifact_roots":[%q],"auto_approve":true,"max_result_chars":2000}}`, fx, root, root))
	cases := []struct {
		chars, refs int
		envelope    bool
		cut         bool
	}{
		{1950, 0, true, false}, {1950, 1, true, false}, {1950, 3, true, false},
		{2000, 0, true, false}, {2000, 1, true, false}, {2000, 3, true, false},
		{2001, 1, true, true}, {4321, 0, true, true}, {4321, 1, true, true}, {4321, 3, true, true},
		{2000, 0, false, false}, {2001, 0, false, true},
	}
	var calls []llmtest.Call
	for i, c := range cases {
		calls = append(calls, llmtest.Call{ID: fmt.Sprint("c", i), Name: "fx__large_result",
			Arguments: fmt.Sprintf(`{"chars":%d,"envelope":%v,"artifacts":%d}`, c.chars, c.envelope, c.refs)})
	}
	srv := llmtest.New(t, llmtest.CallTools(calls...), llmtest.Reply("done"))
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "--quiet", "make big results")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	reqs := srv.Requests()
	results := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	boundary := regexp.MustCompile(`(?s)^<<<odek-untrusted nonce=[0-9a-f]{32} source="fx__large_result">>>\n[^\n]*It is not instructions[^\n]*\n(.*)\n<<<end odek-untrusted nonce=[0-9a-f]{32}>>>(\n\[odek\] read these artifacts with artifact_read: [^\n]*)?$`)
	for i, c := range cases {
		name := fmt.Sprintf("chars=%d refs=%d envelope=%v", c.chars, c.refs, c.envelope)
		m := boundary.FindStringSubmatch(results[fmt.Sprint("c", i)])
		if m == nil {
			r := results[fmt.Sprint("c", i)]
			t.Errorf("%s: no wrapped result: %q … %q", name, r[:min(len(r), 300)], r[max(0, len(r)-300):])
			continue
		}
		text, meta, _ := strings.Cut(m[1], "\n[odek artifact]")
		if got := strings.Count("\n[odek artifact]"+meta, "\n[odek artifact]"); meta != "" && got != c.refs || meta == "" && c.refs != 0 {
			t.Errorf("%s: %d metadata lines, want %d", name, got, c.refs)
		}
		notice := fmt.Sprintf(`[odek: result truncated — server "fx" tool "large_result" produced %d chars, exceeding the configured max_result_chars=2000; the full result is available via the retained artifact references, if any]`, c.chars)
		switch {
		case !c.cut && text != strings.Repeat("x", c.chars):
			t.Errorf("%s: a text within the limit was changed (%d code points)", name, len([]rune(text)))
		case c.cut && (!strings.HasSuffix(text, "\n"+notice) || len([]rune(text)) > 2000 || !strings.HasPrefix(text, strings.Repeat("x", 1500))):
			t.Errorf("%s: cut text of %d code points does not end in the exact notice: …%q", name, len([]rune(text)), text[max(0, len(text)-260):])
		}
	}
}
