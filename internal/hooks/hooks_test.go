package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/redact"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func cfgOf(t *testing.T, js string) *Config {
	t.Helper()
	c, err := FromConfig(json.RawMessage(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }

// recordTool is a tool that counts its runs.
type recordTool struct {
	name  string
	class agent.Class
	mu    sync.Mutex
	runs  int
}

func (r *recordTool) Definition() agent.Definition { return agent.Definition{Name: r.name} }
func (r *recordTool) Assess(json.RawMessage) (agent.Assessment, error) {
	return agent.Assessment{Class: r.class}, nil
}
func (r *recordTool) Run(context.Context, json.RawMessage) (agent.ToolResult, error) {
	r.mu.Lock()
	r.runs++
	r.mu.Unlock()
	return agent.ToolResult{Text: "ran"}, nil
}

func TestConfigErrors(t *testing.T) {
	cases := map[string]string{
		`{"hooks":{"nope":[{"command":["x"]}]}}`:                                       "not an event",
		`{"hooks":{"pre_tool":[{"command":["x"],"url":"https://a.example/h"}]}}`:       "both set",
		`{"hooks":{"pre_tool":[{}]}}`:                                                  "required",
		`{"hooks":{"pre_tool":[{"url":"http://a.example/h"}]}}`:                        "url",
		`{"hooks":{"stop":[{"command":["x"],"tools":["shell"]}]}}`:                     "only pre_tool and post_tool",
		`{"hooks":{"pre_tool":[{"command":["x"],"timeout_seconds":601}]}}`:             "above the limit",
		`{"hooks":{"pre_tool":[{"command":["x"],"timeout_seconds":-1}]}}`:              "negative",
		`{"hooks":{"pre_tool":[{"command":["x"],"tools":["["]}]}}`:                     "pattern",
		`{"hooks":{"pre_tool":[{"command":["x"],"headers":{"a":"b"}}]}}`:               "headers need url",
		`{"hooks":{"pre_tool":[{"url":"https://a.example/h","headers":{"a":"b\n"}}]}}`: "CR, LF",
	}
	for js, want := range cases {
		if _, err := FromConfig(json.RawMessage(js)); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", js, err, want)
		}
	}
	if c, err := FromConfig(json.RawMessage(`{"model":"x"}`)); c != nil || err != nil {
		t.Errorf("no section: %v %v", c, err)
	}
}

// A pre_tool command hook that exits 2 blocks the call; the model gets
// the hook's stderr as the reason; the tool never runs.
func TestPreToolBlocks(t *testing.T) {
	hook := script(t, `grep -q 'rm -rf' && { echo "no rm -rf here, use the trash" >&2; exit 2; }; exit 0`)
	r := NewRunner(cfgOf(t, `{"hooks":{"pre_tool":[{"command":[`+jsonStr(hook)+`],"tools":["shell"]}]}}`), Options{})
	shell := &recordTool{name: "shell", class: agent.ClassDestructive}
	other := &recordTool{name: "read_file", class: agent.ClassSafe}
	ts := r.WrapTools([]agent.Tool{shell, other})
	res, err := ts[0].Run(context.Background(), json.RawMessage(`{"command":"rm -rf build"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "no rm -rf here, use the trash") || shell.runs != 0 {
		t.Fatalf("blocked call: %+v %v runs=%d", res, err, shell.runs)
	}
	if res, _ := ts[0].Run(context.Background(), json.RawMessage(`{"command":"ls"}`)); res.IsError || shell.runs != 1 {
		t.Fatalf("allowed call: %+v runs=%d", res, shell.runs)
	}
	// The matcher leaves read_file alone (the hook would block "rm -rf").
	if res, _ := ts[1].Run(context.Background(), json.RawMessage(`{"path":"rm -rf"}`)); res.IsError || other.runs != 1 {
		t.Fatalf("unmatched tool: %+v", res)
	}
}

func TestClassMatcher(t *testing.T) {
	r := NewRunner(cfgOf(t, `{"hooks":{"pre_tool":[{"command":["/bin/sh","-c","echo classed >&2; exit 2"],"classes":["destructive"]}]}}`), Options{})
	safe := &recordTool{name: "a", class: agent.ClassSafe}
	bad := &recordTool{name: "b", class: agent.ClassDestructive}
	ts := r.WrapTools([]agent.Tool{safe, bad})
	ts[0].Run(context.Background(), json.RawMessage(`{}`))
	res, _ := ts[1].Run(context.Background(), json.RawMessage(`{}`))
	if safe.runs != 1 || bad.runs != 0 || !strings.Contains(res.Text, "classed") {
		t.Fatalf("class matcher: safe=%d bad=%d %q", safe.runs, bad.runs, res.Text)
	}
}

// A hanging hook is killed at its timeout: a pre_tool hook then blocks
// (fail closed), a post_tool hook lets the result through (fail open).
func TestHangingHookTimesOut(t *testing.T) {
	hang := script(t, `sleep 300 & wait`)
	c := cfgOf(t, `{"hooks":{"pre_tool":[{"command":[`+jsonStr(hang)+`],"timeout_seconds":0.2}],"post_tool":[{"command":[`+jsonStr(hang)+`],"timeout_seconds":0.2}]}}`)
	r := NewRunner(c, Options{})
	tool := &recordTool{name: "x"}
	res, _ := r.WrapTools([]agent.Tool{tool})[0].Run(context.Background(), json.RawMessage(`{}`))
	if !res.IsError || !strings.Contains(res.Text, "timed out") || tool.runs != 0 {
		t.Fatalf("pre_tool timeout: %+v runs=%d", res, tool.runs)
	}
	delete(c.Hooks, PreTool)
	res, _ = NewRunner(c, Options{}).WrapTools([]agent.Tool{tool})[0].Run(context.Background(), json.RawMessage(`{}`))
	if res.IsError || tool.runs != 1 {
		t.Fatalf("post_tool timeout should fail open: %+v", res)
	}
	// Other failures fail closed for pre_tool too: exit 1, a missing program.
	for _, cmd := range []string{`["/bin/sh","-c","exit 1"]`, `["/nonexistent/hook"]`} {
		d, reps := NewRunner(cfgOf(t, `{"hooks":{"pre_tool":[{"command":`+cmd+`}]}}`), Options{}).Fire(context.Background(), Input{Event: PreTool, Tool: &ToolInput{Name: "x"}})
		if !d.Block || len(reps) != 1 || !reps[0].FailClosed {
			t.Errorf("%s: %+v %+v", cmd, d, reps)
		}
		d, _ = NewRunner(cfgOf(t, `{"hooks":{"stop":[{"command":`+cmd+`}]}}`), Options{}).Fire(context.Background(), Input{Event: Stop})
		if d.Block {
			t.Errorf("%s: a failing stop hook blocked", cmd)
		}
	}
}

// The hook's environment is the minimal one without secrets; stdin is
// the odek.hook/v1 document; output is bounded.
func TestCommandEnvInputAndBounds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seen")
	hook := script(t, `env > `+out+`.env; cat > `+out+`.in; head -c 1000000 /dev/zero | tr '\0' x >&2; exit 2`)
	r := NewRunner(cfgOf(t, `{"hooks":{"user_prompt":[{"command":[`+jsonStr(hook)+`]}]}}`), Options{
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/x", "OPENAI_API_KEY=sk-secret-123", "GITHUB_TOKEN=ghp_x", "UNRELATED=1"},
	})
	d, reps := r.Fire(context.Background(), Input{Event: UserPrompt, RunID: "r1", Prompt: "do it"})
	if !d.Block || len(d.Reason) > MaxReasonChars+4 || reps[0].Outcome != OutcomeBlocked {
		t.Fatalf("decision: block=%v reason %d chars", d.Block, len(d.Reason))
	}
	env, _ := os.ReadFile(out + ".env")
	if strings.Contains(string(env), "sk-secret") || strings.Contains(string(env), "ghp_") || !strings.Contains(string(env), "ODEK_HOOK_EVENT=user_prompt") {
		t.Fatalf("hook environment:\n%s", env)
	}
	var in Input
	b, _ := os.ReadFile(out + ".in")
	if err := json.Unmarshal(b, &in); err != nil || in.Schema != InputSchema || in.RunID != "r1" || in.Prompt != "do it" {
		t.Fatalf("stdin: %s %v", b, err)
	}
}

// An HTTP hook gets every call as JSON; its "decision":"block" blocks;
// an HTTP error fails closed for pre_tool.
func TestHTTPHook(t *testing.T) {
	var mu sync.Mutex
	var got []Input
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in Input
		json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		got = append(got, in)
		st := status
		mu.Unlock()
		w.WriteHeader(st)
		if in.Event == PreTool && strings.Contains(string(in.Tool.Arguments), "forbidden") {
			w.Write([]byte(`{"decision":"block","reason":"policy says no"}`))
		}
	}))
	defer srv.Close()
	r := NewRunner(cfgOf(t, `{"hooks":{"pre_tool":[{"url":"`+srv.URL+`"}],"post_tool":[{"url":"`+srv.URL+`"}]}}`), Options{})
	tool := &recordTool{name: "x"}
	wt := r.WrapTools([]agent.Tool{tool})[0]
	wt.Run(context.Background(), json.RawMessage(`{"a":1}`))
	res, _ := wt.Run(context.Background(), json.RawMessage(`{"a":"forbidden"}`))
	if !res.IsError || !strings.Contains(res.Text, "policy says no") || tool.runs != 1 {
		t.Fatalf("http block: %+v runs=%d", res, tool.runs)
	}
	mu.Lock()
	if len(got) != 3 || got[0].Event != PreTool || got[1].Event != PostTool || got[1].Result.Text != "ran" {
		t.Fatalf("http hook saw %+v", got)
	}
	status = http.StatusInternalServerError
	mu.Unlock()
	res, _ = wt.Run(context.Background(), json.RawMessage(`{"a":2}`))
	if !res.IsError || !strings.Contains(res.Text, "HTTP 500") {
		t.Fatalf("http error should fail closed: %+v", res)
	}
}

// The cost a pre_tool command hook adds to every matching tool call: one
// process spawn and its JSON on stdin.
func BenchmarkPreToolCommandHook(b *testing.B) {
	r := NewRunner(&Config{Hooks: map[Event][]Hook{PreTool: {{Command: []string{"/bin/true"}, timeout: DefaultTimeout}}}}, Options{})
	in := Input{Event: PreTool, RunID: "r", Tool: &ToolInput{Name: "shell", Class: "safe", Arguments: json.RawMessage(`{"command":"ls"}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := r.Fire(context.Background(), in); d.Block {
			b.Fatal("blocked")
		}
	}
}

func BenchmarkWrappedToolNoMatch(b *testing.B) {
	r := NewRunner(&Config{Hooks: map[Event][]Hook{PreTool: {{Command: []string{"/bin/true"}, Tools: []string{"other"}, timeout: DefaultTimeout}}}}, Options{})
	tool := r.WrapTools([]agent.Tool{&recordTool{name: "x"}})[0]
	b.ReportAllocs()
	for b.Loop() {
		tool.Run(context.Background(), json.RawMessage(`{}`))
	}
}

// What a hook receives passes the run's redactor: a secret the run knows
// never reaches a hook's endpoint.
func TestHookInputRedacted(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	red := redact.New()
	red.AddValue("hunter2-very-secret-value")
	r := NewRunner(cfgOf(t, `{"hooks":{"pre_tool":[{"url":"`+srv.URL+`"}]}}`), Options{Redactor: red})
	tool := &recordTool{name: "x"}
	r.WrapTools([]agent.Tool{tool})[0].Run(context.Background(), json.RawMessage(`{"password":"hunter2-very-secret-value"}`))
	if strings.Contains(string(body), "hunter2") || !strings.Contains(string(body), redact.Marker) {
		t.Fatalf("hook body: %s", body)
	}
}
