package main_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/bintest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue/queuetest"
)

// These tests run the real odek-bot binary against the fake Bot API, with
// a real redis-server and real `odek worker` processes answering from the
// fake LLM.

var bins bintest.Set

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// binaries builds odek and odek-bot once per test binary; TestMain
// removes them.
func binaries(t testing.TB) (odek, odekBot string) {
	t.Helper()
	odek, err := bins.Build("github.com/odekrun/odek/cmd/odek")
	if err != nil {
		t.Fatal(err)
	}
	odekBot, err = bins.Build("github.com/odekrun/odek/cmd/odek-bot")
	if err != nil {
		t.Fatal(err)
	}
	return odek, odekBot
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *bintest.Buffer
	exited chan struct{}
}

func start(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Dir = t.TempDir()
	p := &proc{name: name, cmd: cmd, out: &bintest.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.out.String())
		}
		if strings.Contains(p.out.String(), bottest.Token) {
			t.Errorf("%s printed the bot token", name)
		}
	})
	return p
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

type instance struct {
	t        *testing.T
	tg       *bottest.Server
	odek     string
	odekBot  string
	env      []string
	healthOK string
	redis    string  // redis-server's address
	bots     []*proc // the odek-bot processes started, in order
	botEnv   []string
}

// newInstance starts redis-server, the fake Bot API and odek-bot in
// distributed mode.
func newInstance(t *testing.T, llmURL string, extra ...string) *instance {
	odek, odekBot := binaries(t)
	srv := queuetest.StartServer(t, queuetest.ServerOptions{})
	art := t.TempDir()
	in := &instance{t: t, tg: bottest.New(t), odek: odek, odekBot: odekBot, redis: srv.Addr}
	in.env = append([]string{
		"REDIS_URL=redis://" + srv.Addr + "/0",
		"ODEK_ARTIFACTS_DIR=" + art,
		"ODEK_QUEUE_LEASE=2",
		"ODEK_BASE_URL=" + llmURL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + t.TempDir(),
	}, extra...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	in.healthOK = "http://" + addr + "/healthz"
	in.botEnv = append([]string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + in.tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_HEALTH_ADDR=" + addr,
	}, in.env...)
	in.startBot()
	in.tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) > 0 }, "setMyCommands")
	return in
}

// startBot starts an odek-bot process of the instance (another one after
// a kill: a restart).
func (in *instance) startBot() *proc {
	p := start(in.t, "odek-bot", in.odekBot, in.botEnv)
	in.bots = append(in.bots, p)
	return p
}

func (in *instance) worker(name string) *proc {
	return start(in.t, name, in.odek, in.env, "worker", "--name", name, "--approval-timeout", "30s")
}

func visible(s *bottest.Server, chat int64, sub string) bool {
	for _, m := range s.Visible(chat) {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// A goal becomes a job on a real worker: status message edited from the
// progress stream, an approval answered with the inline keyboard, then the
// reply with the artifact line and the footer; the status message goes.
func TestE2EGoalApprovalArtifactReply(t *testing.T) {
	// The final answer waits until the test has seen the status message
	// edited from the progress stream.
	edited := make(chan struct{})
	var llmCalls int
	var mu sync.Mutex
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		llmCalls++
		n := llmCalls
		mu.Unlock()
		switch n {
		case 1:
			return llmtest.CallTools(llmtest.Call{ID: "w", Name: "write_file", Arguments: `{"path":"report.md","content":"# findings"}`})
		case 2:
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"python3 -c 'print(6*7)'"}`})
		}
		select {
		case <-edited:
		case <-time.After(30 * time.Second):
		}
		return llmtest.Reply("Report **written** (see below).")
	})
	in := newInstance(t, llm.URL)
	in.worker("w1")
	in.tg.UserMessage(6666, 6666, "let me in")
	in.tg.UserMessage(1001, 1001, "write a report")
	var kb bottest.Message
	in.tg.Wait(t, 30*time.Second, "approval keyboard", func(s *bottest.Server) bool {
		for _, m := range s.Messages(1001) {
			if len(m.Keyboard) > 0 {
				kb = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(kb.Text, "python3") {
		t.Fatalf("approval text %q", kb.Text)
	}
	in.tg.PressButton(1001, 1001, kb.ID, kb.Keyboard[0][0])
	in.tg.Wait(t, 30*time.Second, "status edited with the tool", func(s *bottest.Server) bool {
		return visible(s, 1001, "🔧 shell: python3")
	})
	close(edited)
	in.tg.Wait(t, 30*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "Report written (see below).") })
	// The status message comes after the approval prompt (it waits
	// StatusDelay), shows the progress stream, then is deleted.
	var status *bottest.Message
	for _, m := range in.tg.Messages(1001) {
		if strings.Contains(m.Text, "shell: python3") && len(m.Keyboard) == 0 && !strings.Contains(m.Text, "🔐") {
			status = &m
		}
	}
	if status == nil || !status.Deleted {
		t.Errorf("status message %+v: want it to show the progress stream, then be deleted; messages %+v", status, in.tg.Messages(1001))
	}
	if !visible(in.tg, 1001, "📎 a1 · report.md") || !visible(in.tg, 1001, "✅ Approved once") {
		t.Errorf("artifact line or approval outcome missing: %q", in.tg.Visible(1001))
	}
	if v := in.tg.Visible(6666); len(v) != 1 || !strings.Contains(v[0], "6666") {
		t.Errorf("unauthorized user: %q", v)
	}
	in.tg.UserMessage(1001, 1001, "/artifact a1")
	calls := in.tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) == 1 }, "sendDocument")
	if string(calls[0].File) != "# findings" {
		t.Errorf("document %q", calls[0].File)
	}
	out, err := exec.Command(in.odekBot, "healthcheck", in.healthOK).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Errorf("healthcheck: %v %s", err, out)
	}
}

// A worker killed mid-job: another worker takes the job over after the
// lease and the chat gets exactly one reply.
func TestE2EWorkerKilledMidJobOneReply(t *testing.T) {
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		arrived <- struct{}{}
		<-release
		return llmtest.Reply("survived the crash")
	})
	in := newInstance(t, llm.URL)
	w1 := in.worker("w1")
	in.tg.UserMessage(1001, 1001, "long job")
	<-arrived // w1 is inside the model call
	w1.kill()
	in.worker("w2")
	<-arrived // w2 took the job over after the lease
	once.Do(func() { close(release) })
	in.tg.Wait(t, 30*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "survived the crash") })
	// A later command's reply is a barrier: results are delivered in the
	// chat's order, so a duplicate would have come before it.
	in.tg.UserMessage(1001, 1001, "/status")
	in.tg.Wait(t, 30*time.Second, "/status reply", func(s *bottest.Server) bool { return visible(s, 1001, "Idle") })
	count := 0
	for _, m := range in.tg.Visible(1001) {
		if strings.Contains(m, "survived the crash") {
			count++
		}
	}
	if count != 1 {
		t.Errorf("replies = %d, want exactly 1: %q", count, in.tg.Visible(1001))
	}
}

func TestHelpListsEveryVariableAndRefusesWithoutAllowlist(t *testing.T) {
	_, odekBot := binaries(t)
	out, err := exec.Command(odekBot, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, v := range []string{"TELEGRAM_BOT_TOKEN", "ODEK_TELEGRAM_ALLOWED_USERS", "ODEK_TELEGRAM_ALLOW_ALL", "REDIS_URL", "ODEK_WORKERS", "ODEK_HEALTH_ADDR", "ODEK_TELEGRAM_AGENT_TIMEOUT"} {
		if !strings.Contains(string(out), v) {
			t.Errorf("--help lacks %s", v)
		}
	}
	cmd := exec.Command(odekBot)
	cmd.Env = []string{"TELEGRAM_BOT_TOKEN=x", "REDIS_URL=redis://127.0.0.1:1/0"}
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "no allowlist") {
		t.Errorf("without an allowlist: %v %s", err, out)
	}
}

// The odek subcommand the compose file runs exists in the real binary.
func TestOdekSubcommandsAreReal(t *testing.T) {
	odek, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, odek, "worker", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "concurrency") {
		t.Errorf("odek worker --help: %v %s", err, out)
	}
}

// Embedded mode: no REDIS_URL, the bot runs the job on its own in-process
// worker, answering from the fake LLM.
func TestE2EEmbeddedMode(t *testing.T) {
	_, odekBot := binaries(t)
	llm := llmtest.New(t, llmtest.Reply("embedded *answer*"))
	tg := bottest.New(t)
	start(t, "odek-bot", odekBot, []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + t.TempDir(), "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	})
	tg.UserMessage(1001, 1001, "hello")
	tg.Wait(t, 30*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "embedded answer") })
	if n := llm.Calls(); n != 1 {
		t.Errorf("LLM calls = %d, want 1", n)
	}
}

// A second message while the first runs is queued with its position;
// /stop cancels the running job on the real worker and the queued one.
func TestE2EQueuedSecondMessageAndStop(t *testing.T) {
	arrived := make(chan string, 4)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		arrived <- r.LastMessage().Content
		<-release
		return llmtest.Reply("too late")
	})
	in := newInstance(t, llm.URL)
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "first")
	if got := <-arrived; !strings.Contains(got, "first") {
		t.Fatalf("model saw %q", got)
	}
	in.tg.UserMessage(1001, 1001, "second")
	in.tg.Wait(t, 30*time.Second, "queued ack", func(s *bottest.Server) bool { return visible(s, 1001, "Queued — position 1") })
	in.tg.UserMessage(1001, 1001, "/stop")
	in.tg.Wait(t, 30*time.Second, "both stopped", func(s *bottest.Server) bool {
		n := 0
		for _, m := range s.Visible(1001) {
			if strings.HasPrefix(m, "⏹ Stopped") {
				n++
			}
		}
		return n == 2
	})
	once.Do(func() { close(release) })
	select {
	case got := <-arrived:
		t.Errorf("the model was called again after /stop: %q", got)
	default:
	}
	if visible(in.tg, 1001, "too late") {
		t.Error("a canceled job's answer was delivered")
	}
}

// Issue 17 point 10: embedded mode honours ODEK_APPROVAL_TIMEOUT (the
// prompt said 5 min with 20 s configured).
func TestE2EEmbeddedApprovalTimeout(t *testing.T) {
	_, odekBot := binaries(t)
	var mu sync.Mutex
	calls := 0
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			return llmtest.CallTools(llmtest.Call{ID: "s", Name: "shell", Arguments: `{"command":"python3 -c 'print(6*7)'"}`})
		}
		return llmtest.Reply("denied, fine")
	})
	tg := bottest.New(t)
	start(t, "odek-bot", odekBot, []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1", "ODEK_APPROVAL_TIMEOUT=20s",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + t.TempDir(), "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	})
	tg.UserMessage(1001, 1001, "compute")
	var kb bottest.Message
	tg.Wait(t, 30*time.Second, "approval keyboard", func(s *bottest.Server) bool {
		for _, m := range s.Messages(1001) {
			if len(m.Keyboard) > 0 {
				kb = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(kb.Shown, "UTC (in 20 s)") && !strings.Contains(kb.Shown, "UTC (in 19 s)") {
		t.Errorf("prompt deadline: %q, want in 20 s", kb.Shown)
	}
	tg.PressButton(1001, 1001, kb.ID, kb.Keyboard[0][1])
	tg.Wait(t, 30*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "denied, fine") })
}

// Issue 17 "files in / files out", distributed: a document sent in the chat
// is saved in the chat's directory on the shared artifacts volume (never
// through Redis), a real worker's agent reads it and writes a file, and
// that file comes back into the chat as a document with the answer.
func TestE2EDocumentInFileOut(t *testing.T) {
	var mu sync.Mutex
	var reqs []llmtest.Recorded
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		reqs = append(reqs, r)
		n := len(reqs)
		mu.Unlock()
		switch n {
		case 1:
			return llmtest.CallTools(llmtest.Call{ID: "r", Name: "read_file", Arguments: `{"path":"uploads/notes.txt"}`})
		case 2:
			return llmtest.CallTools(llmtest.Call{ID: "w", Name: "write_file", Arguments: `{"path":"upper.txt","content":"MEETING NOTES"}`})
		}
		return llmtest.Reply("Done: **upper.txt**.")
	})
	in := newInstance(t, llm.URL)
	in.worker("w1")
	in.tg.Send(bottest.Incoming{Chat: 1001, User: 1001, Caption: "upper-case this",
		Document: &bottest.File{Name: "notes.txt", MIME: "text/plain", Data: []byte("meeting notes")}})
	calls := in.tg.WaitCalls(t, 60*time.Second, func(c []bottest.Call) bool { return len(c) == 1 }, "sendDocument")
	if calls[0].FileName != "upper.txt" || string(calls[0].File) != "MEETING NOTES" {
		t.Errorf("file out: %q %q", calls[0].FileName, calls[0].File)
	}
	in.tg.Wait(t, 30*time.Second, "reply", func(s *bottest.Server) bool { return visible(s, 1001, "Done: upper.txt.") })
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) < 2 {
		t.Fatalf("%d LLM requests", len(reqs))
	}
	goal := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if !strings.Contains(fmt.Sprint(goal), "upper-case this") || !strings.Contains(fmt.Sprint(goal), "uploads/notes.txt") {
		t.Errorf("goal: %v", goal)
	}
	if !strings.Contains(string(reqs[1].Body), "meeting notes") {
		t.Errorf("the agent did not read the uploaded file: %s", reqs[1].Body)
	}
}

// Issue 17 point 9, embedded mode: SIGTERM while a job runs lets the job
// finish and delivers its answer before the process exits, instead of
// throwing away work whose tokens were spent.
func TestE2EEmbeddedShutdownDeliversFinishedAnswer(t *testing.T) {
	_, odekBot := binaries(t)
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		asked <- struct{}{}
		<-release
		return llmtest.Reply("finished during shutdown")
	})
	tg := bottest.New(t)
	p := start(t, "odek-bot", odekBot, []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + t.TempDir(), "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	})
	tg.UserMessage(1001, 1001, "work")
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the job never reached the model")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case <-p.exited:
	case <-time.After(40 * time.Second):
		t.Fatal("odek-bot did not exit after SIGTERM")
	}
	if !visible(tg, 1001, "finished during shutdown") {
		t.Errorf("the answer finished during shutdown was not delivered: %q", tg.Visible(1001))
	}
}
