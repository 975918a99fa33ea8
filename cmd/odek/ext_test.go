package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/internal/tools"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

func TestParseCheckArgsUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"a", "b"},
		{"--"},
		{"name", "--", "cmd"},
		{"--call", "x=[1]", "--", "cmd"},
		{"--repeat", "0", "--", "cmd"},
		{"--timeout", "-1", "--", "cmd"},
		{"--env", "NOEQUALS", "--", "cmd"},
		{"--name", "a__b", "--", "cmd"},
		{"--bogus", "--", "cmd"},
	} {
		_, err := parseCheckArgs(args, &bytes.Buffer{})
		if exitCode(err) != exitSetup {
			t.Errorf("args %q: exit %d (%v), want %d", args, exitCode(err), err, exitSetup)
		}
	}
	o, err := parseCheckArgs([]string{"--call", "echo", "--root", ".", "--env", "A=1", "--", "srv", "--flag", "--"}, &bytes.Buffer{})
	if err != nil || len(o.command) != 3 || o.command[1] != "--flag" || !filepath.IsAbs(o.roots[0]) || o.env["A"] != "1" {
		t.Fatalf("%+v %v", o, err)
	}
}

// check runs `odek ext check` in-process.
func check(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var so, se bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := run(ctx, append([]string{"ext", "check"}, args...), nil, &so, &se)
	return so.String(), se.String(), exitCode(err)
}

func TestExtCheckFixturePasses(t *testing.T) {
	fx := mcptest.FixturePath(t)
	root := t.TempDir()
	out, errOut, code := check(t, "--name", "fx", "--root", root, "--repeat", "3",
		"--call", `echo={"text":"hi"}`, "--call", `artifact_result={"count":2}`, "--call", `large_result={"chars":300000}`,
		"--", fx, "-root="+root)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"PASS  handshake              negotiated protocolVersion 2025-03-26 over stdio",
		"PASS  tool-names             6 tool(s)",
		"the model sees them as fx__",
		"PASS  ping",
		"PASS  call echo              2 code points; latency 3 calls, p50",
		"PASS  call artifact_result   ", "2 artifact ref(s) valid (art-1, art-2)",
		"PASS  call large_result", "truncated to max_result_chars",
		"PASS  unknown-arguments      echo ignored an extra unknown argument",
		"PASS  stdout",
		"PASS  shutdown",
		" 0 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestExtCheckFailures(t *testing.T) {
	fx := mcptest.FixturePath(t)
	root := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantHas []string
	}{
		{"command exits", []string{"--", "/bin/false"}, []string{"FAIL  handshake", `server "false" failed to start (initialize)`}},
		{"no such command", []string{"--", "/nonexistent/odek-server"}, []string{"FAIL  handshake", "spawn"}},
		{"hangs in initialize", []string{"--startup-timeout", "1", "--", fx, "-mode=hang-initialize"}, []string{"FAIL  handshake", "startup_timeout"}},
		{"unsupported protocol", []string{"--", fx, "-mode=bad-protocol"}, []string{"FAIL  handshake", "1999-01-01"}},
		{"invalid tool name", []string{"--", fx, "-mode=invalid-tool-name"}, []string{"FAIL  tool-names", `"bad name"`}},
		{"garbage on stdout", []string{"--call", "echo", "--", fx, "-mode=garbage"}, []string{"PASS  call echo", "FAIL  stdout"}},
		{"artifact outside roots", []string{"--root", root, "--call", `bad_artifact={"kind":"passwd"}`, "--", fx, "-root=" + root}, []string{"FAIL  call bad_artifact", `"art-1"`}},
		{"wrong hash", []string{"--root", root, "--call", `bad_artifact={"kind":"hash"}`, "--", fx, "-root=" + root}, []string{"FAIL  call bad_artifact", "sha256"}},
		{"no roots", []string{"--call", "artifact_result", "--", fx, "-root=" + root}, []string{"FAIL  call artifact_result", "no artifact_roots"}},
		{"error result", []string{"--call", `error_result={"text":"boom"}`, "--", fx}, []string{"FAIL  call error_result", "boom"}},
		{"unknown tool", []string{"--call", "nope", "--", fx}, []string{`FAIL  call nope`, `does not list a tool "nope"`}},
		{"timeout", []string{"--timeout", "1", "--call", `slow={"ms":30000}`, "--", fx}, []string{"FAIL  call slow", "timeout_seconds=1"}},
		{"malformed envelope", []string{"--root", root, "--call", `bad_artifact={"kind":"malformed_json"}`, "--", fx, "-root=" + root}, []string{"FAIL  call bad_artifact"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := check(t, tc.args...)
			if code != exitError {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitError, out, errOut)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestExtCheckConfiguredServer(t *testing.T) {
	fx := mcptest.FixturePath(t)
	home := t.TempDir()
	proj := t.TempDir()
	root := t.TempDir()
	cfg := fmt.Sprintf(`{"mcp_servers":{"fx":{"command":%q,"args":["-root=%s"],"artifact_roots":[%q],"env":{"API_TOKEN":"t0ps3cret"}},
		"broken":{"command":"x","max_response_bytes":-1}}}`, fx, root, root)
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ODEK_HOME", home)
	t.Chdir(proj)

	out, errOut, code := check(t, "--call", "artifact_result", "fx")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `server "fx" from `+filepath.Join(home, "config.json")) || !strings.Contains(out, "1 artifact ref(s) valid") ||
		!strings.Contains(out, `WARN  config                 MCP server "fx": env key "API_TOKEN"`) || strings.Contains(out, "t0ps3cret") {
		t.Fatalf("output:\n%s", out)
	}
	out, _, code = check(t, "broken")
	if code != exitError || !strings.Contains(out, "FAIL  config") || !strings.Contains(out, "max_response_bytes=-1 is negative") {
		t.Fatalf("broken entry: exit %d\n%s", code, out)
	}
	_, _, code = check(t, "missing")
	if code != exitSetup {
		t.Fatalf("unknown server: exit %d", code)
	}
}

// TestExampleExtensionPassesCheck keeps examples/echo-extension honest: it
// builds with the module and passes every rule of `odek ext check`.
func TestExampleExtensionPassesCheck(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "echo-extension")
	build := exec.Command("go", "build", "-o", bin, "../../examples/echo-extension")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, b)
	}
	dir := t.TempDir()
	out, errOut, code := check(t, "--root", dir, "--call", `echo={"text":"hi"}`, "--call", `report={"lines":3,"text":"ok"}`, "--", bin, "-dir", dir)
	if code != 0 || !strings.Contains(out, "1 artifact ref(s) valid (report-1)") || !strings.Contains(out, "9 passed, 0 failed, 0 warnings") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestExtApproveYes(t *testing.T) {
	fx := mcptest.FixturePath(t)
	home := t.TempDir()
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "odek.json"), []byte(fmt.Sprintf(`{"mcp_servers":{"fx":{"command":%q},"other":{"command":%q}}}`, fx, fx)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ODEK_HOME", home)
	t.Chdir(proj)
	var so, se bytes.Buffer
	err := run(context.Background(), []string{"ext", "approve", "--yes", "fx"}, nil, &so, &se)
	if exitCode(err) != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", exitCode(err), err, so.String(), se.String())
	}
	out := so.String()
	for _, want := range []string{`declares MCP server "fx". Start it?`, "yes (--yes)", `offers 6 tool(s) not approved yet`, `MCP server "fx" (project): loaded with 6 tools`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"other"`) {
		t.Errorf("an unselected server was approved:\n%s", out)
	}
	a, err := ext.ReadApprovals(home)
	if err != nil || len(a.Servers) != 1 || len(a.Tools) != 6 {
		t.Fatalf("approvals %+v %v", a, err)
	}
	if code := exitCode(run(context.Background(), []string{"ext", "approve", "--yes", "nope"}, nil, &so, &se)); code != exitSetup {
		t.Fatalf("unknown server: exit %d", code)
	}
}

// TestExtCheckProjectServerNeedsApproval: `odek ext check <name>` for a
// server declared in ./odek.json spawns it only with the same grants a run
// needs (a persisted approval, ODEK_APPROVE_MCP=1, or a yes at the
// terminal), so naming a repository's server does not run its command
// unseen.
func TestExtCheckProjectServerNeedsApproval(t *testing.T) {
	if _, ok := tools.NewTTYPrompter(); ok {
		t.Skip("a terminal is available: the checker would ask on it")
	}
	home := t.TempDir()
	proj := t.TempDir()
	mark := filepath.Join(t.TempDir(), "spawned")
	script := filepath.Join(proj, "server.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n: > \"$MARK\"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"mcp_servers":{"repo":{"command":"./server.sh","env":{"MARK":%q}}}}`, mark)
	if err := os.WriteFile(filepath.Join(proj, "odek.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ODEK_HOME", home)
	t.Setenv("ODEK_APPROVE_MCP", "")
	t.Chdir(proj)

	out, errOut, code := check(t, "repo")
	if code != exitError || !strings.Contains(out, "FAIL  approval") || !strings.Contains(out, "ODEK_APPROVE_MCP=1") {
		t.Fatalf("unapproved project server: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the unapproved project server was spawned")
	}

	t.Setenv("ODEK_APPROVE_MCP", "1")
	out, _, _ = check(t, "repo")
	if strings.Contains(out, "FAIL  approval") {
		t.Fatalf("ODEK_APPROVE_MCP=1 did not grant the spawn:\n%s", out)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("with ODEK_APPROVE_MCP=1 the server was not spawned: %v", err)
	}
}

// ext check on a configured url server: the negotiated version and the
// transport are printed.
func TestExtCheckRemoteServer(t *testing.T) {
	url := mcptest.HTTPFixture(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"mcp_servers":{"web":{"url":"`+url+`","protocol_version":"2025-06-18"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ODEK_HOME", home)
	var stdout, stderr bytes.Buffer
	err := cmdExt(context.Background(), []string{"check", "--call", `echo={"text":"hi"}`, "web"}, &stdout, &stderr)
	out := stdout.String()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr.String())
	}
	for _, want := range []string{"negotiated protocolVersion 2025-06-18 over Streamable HTTP " + url, "PASS  call echo", "PASS  shutdown               session ended (DELETE)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestExtCheckProtocolVersionFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := cmdExt(context.Background(), []string{"check", "--protocol-version", "2025-11-25", "--", mcptest.FixturePath(t)}, &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "negotiated protocolVersion 2025-11-25 over stdio") {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	stdout.Reset()
	err = cmdExt(context.Background(), []string{"check", "--protocol-version", "1999-01-01", "--", mcptest.FixturePath(t)}, &stdout, &stderr)
	if err == nil || !strings.Contains(stdout.String(), "FAIL  config") || !strings.Contains(stdout.String(), "protocol_version") {
		t.Fatalf("unsupported version: %v\n%s", err, stdout.String())
	}
}

// odek-extension/v1's minimal server needs only initialize, tools/list and
// tools/call: one that refuses ping gets a warning, and the verdict passes.
func TestExtCheckServerWithoutPingPasses(t *testing.T) {
	fx := mcptest.FixturePath(t)
	out, errOut, code := check(t, "--name", "fx", "--call", `echo={"text":"hi"}`, "--", fx, "-mode=no-ping")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"WARN  ping", "base MCP expects servers to answer it", "PASS  call echo", " 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a minimal server failed a check:\n%s", out)
	}
}
