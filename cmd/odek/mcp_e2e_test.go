package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/mcpclient/mcpauth"
	"github.com/odekrun/odek/mcpclient/mcpauth/authtest"
)

// odek mcp login (manual flow) against a strict loopback authorization
// server, then a run whose model calls the protected server's tool with
// the stored token; no token reaches the events.
func TestMCPLoginThenRun(t *testing.T) {
	as := authtest.New(t)
	home, homeEnv := extOdekHome(t, fmt.Sprintf(`{"remote":{"url":%q,"auto_approve":true}}`, as.MCPURL()))

	// Before the login the server's 401 names the command to run.
	out := runOdekEnv(t, "http://127.0.0.1:1", t.TempDir(), []string{homeEnv}, "ext", "check", "remote")
	if out.code == 0 || !strings.Contains(out.stdout+out.stderr, "odek mcp login remote") {
		t.Fatalf("ext check before login: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := odekCmd(t, ctx, "http://127.0.0.1:1", t.TempDir(), "mcp", "login", "--manual", "remote")
	cmd.Env = append(cmd.Env, homeEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdin, _ := cmd.StdinPipe()
	stderr, _ := cmd.StderrPipe()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		seen.WriteString(line + "\n")
		if strings.HasPrefix(line, as.URL()+"/authorize?") {
			loc, err := authtest.Redirect(line)
			if err != nil {
				t.Fatalf("authorize: %v", err)
			}
			io.WriteString(stdin, loc+"\n")
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("odek mcp login: %v\n%s", err, seen.String())
	}
	if !strings.Contains(stdout.String(), "logged in") {
		t.Fatalf("login output: %s", stdout.String())
	}
	st, err := os.Stat(filepath.Join(home, "mcp-auth", "remote.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	rec, err := mcpauth.NewStore(home).Load("remote")
	if err != nil {
		t.Fatal(err)
	}

	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "remote__whoami", Arguments: `{}`}),
		llmtest.Reply("done"),
	)
	evPath := filepath.Join(t.TempDir(), "events.jsonl")
	out = runOdekEnv(t, srv.URL, t.TempDir(), []string{homeEnv}, "run", "--events-jsonl", evPath, "who am i")
	if out.code != 0 {
		t.Fatalf("run: exit %d\n%s", out.code, out.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastMessage().Content, "client "+rec.ClientID) {
		t.Fatalf("the tool result did not come from the protected server: %+v", reqs)
	}
	ev, _ := os.ReadFile(evPath)
	if strings.Contains(string(ev), rec.AccessToken) || strings.Contains(out.stderr, rec.AccessToken) {
		t.Fatal("the access token appears in the events or on stderr")
	}

	// Logout revokes and deletes.
	out = runOdekEnv(t, "http://127.0.0.1:1", t.TempDir(), []string{homeEnv}, "mcp", "logout", "remote")
	if out.code != 0 || !strings.Contains(out.stdout, "revoked") {
		t.Fatalf("logout: %d %s %s", out.code, out.stdout, out.stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "mcp-auth", "remote.json")); !os.IsNotExist(err) {
		t.Fatalf("tokens still stored: %v", err)
	}
}
