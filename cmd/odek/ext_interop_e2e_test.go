package main_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/events"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

// One run through the real odek binary per SDK and transport: the model
// calls a tool of a server built with the official go-sdk (stdio and
// Streamable HTTP), with mcp-go, and of odek's fixture behind HTTP with a
// ${ENV} header; the results it sees carry what the servers meant.

func TestRunGoSDKServerOverStdioAndHTTP(t *testing.T) {
	bin := mcptest.GoServer(t, "gosdk-server")
	url := mcptest.GoHTTPServer(t)
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"gosdk":{"command":%q,"auto_approve":true},"web":{"url":%q,"auto_approve":true,"protocol_version":"2025-06-18"}}`, bin, url))
	srv := llmtest.New(t,
		llmtest.CallTools(
			llmtest.Call{ID: "c1", Name: "gosdk__search_nodes", Arguments: `{"query":"stdio"}`},
			llmtest.Call{ID: "c2", Name: "web__search_nodes", Arguments: `{"query":"http"}`},
		),
		llmtest.CallTools(llmtest.Call{ID: "c3", Name: "web__long_task", Arguments: `{"steps":2,"ms":300}`}),
		llmtest.CallTools(llmtest.Call{ID: "c4", Name: "gosdk__files_read", Arguments: `{"path":"/etc/motd"}`}, llmtest.Call{ID: "c5", Name: "web__fail", Arguments: `{"text":"boom"}`}),
		llmtest.Reply("done"),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "--events-jsonl", evPath, "search")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests\nstderr: %s", len(reqs), out.stderr)
	}
	results := extToolResults(reqs[1])
	for id, want := range map[string]string{"c1": "wrote the first program for stdio", "c2": "wrote the first program for http"} {
		if !strings.Contains(results[id], "Nodes searched successfully") || !strings.Contains(results[id], want) {
			t.Errorf("%s: the structured data did not reach the model:\n%s", id, results[id])
		}
	}
	if !strings.Contains(out.stderr, "… web__long_task: 2/2 step 2 of 2") {
		t.Errorf("no progress on stderr:\n%s", out.stderr)
	}
	last := extToolResults(reqs[3])
	if !strings.Contains(last["c4"], "read /etc/motd") {
		t.Errorf("dotted tool: %s", last["c4"])
	}
	if !strings.Contains(last["c5"], `[odek tool error] server "web" tool "fail" reported a failure`) || !strings.Contains(last["c5"], "boom") {
		t.Errorf("isError result: %s", last["c5"])
	}
	var progress int
	for _, e := range readEvents(t, evPath) {
		if e.Type == events.Type("tool_call_progress") && e.Data["tool"] == "web__long_task" {
			progress++
		}
	}
	if progress != 2 {
		t.Errorf("%d tool_call_progress events, want 2", progress)
	}
	if !strings.Contains(out.stderr, `MCP server "web" (operator): loaded with`) {
		t.Errorf("no report for the HTTP server:\n%s", out.stderr)
	}
}

func TestRunMCPGoServer(t *testing.T) {
	bin := mcptest.GoServer(t, "mcpgo-server")
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"mg":{"command":%q,"auto_approve":true}}`, bin))
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "w", Name: "mg__weather", Arguments: `{"city":"Oslo"}`}),
		llmtest.Reply("rainy"),
	)
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "weather?")
	if out.code != 0 || out.stdout != "rainy\n" {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	if r := extToolResults(srv.Requests()[1])["w"]; !strings.Contains(r, "Weather fetched") || !strings.Contains(r, `"conditions":"drizzle"`) {
		t.Fatalf("structured weather did not reach the model:\n%s", r)
	}
}

// A url server whose Authorization header references the environment: the
// header is resolved from odek's environment and the value never shows.
func TestRunHTTPServerWithEnvHeader(t *testing.T) {
	const token = "tok-e2e-secret-value"
	url := mcptest.HTTPFixture(t, "-http-auth=Bearer "+token)
	_, homeEnv := extOdekHome(t, fmt.Sprintf(`{"fxweb":{"url":%q,"headers":{"Authorization":"Bearer ${FX_TOKEN}"},"auto_approve":true}}`, url))
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "e", Name: "fxweb__echo", Arguments: `{"text":"over http"}`}),
		llmtest.Reply("ok"),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out := runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv, "FX_TOKEN=" + token}, "run", "--events-jsonl", evPath, "echo")
	if out.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", out.code, out.stderr)
	}
	if r := extToolResults(srv.Requests()[1])["e"]; !strings.Contains(r, "over http") {
		t.Fatalf("result %s", r)
	}
	if strings.Contains(out.stderr, token) || strings.Contains(out.stdout, token) {
		t.Fatal("the header value was printed")
	}
	for _, e := range readEvents(t, evPath) {
		if strings.Contains(fmt.Sprint(e.Data), token) {
			t.Fatalf("the header value is in event %s", e.Type)
		}
	}
	// Without the variable the server fails to load, naming the variable.
	srv = llmtest.New(t, llmtest.Reply("ok"))
	out = runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "echo")
	if !strings.Contains(out.stderr, "${FX_TOKEN}") || !strings.Contains(out.stderr, `MCP server "fxweb" (operator): failed`) {
		t.Fatalf("missing variable:\n%s", out.stderr)
	}
}

// extToolResults maps call ids to the tool messages of a request.
func extToolResults(rec llmtest.Recorded) map[string]string {
	out := map[string]string{}
	for _, m := range rec.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}
