package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
)

// TestQueueCLIChangesThroughTheRunningBot: while a real odek-bot in
// embedded mode holds its store, `odek queue … --store` changes its queue
// through the bot's admin socket and the bot acts on it at once: a
// submitted job is answered in the fake Bot API, a running job is
// canceled, a dead letter is retried and answered, purge-dead and the
// schedules line of stats work; the store's own validation refuses a bad
// job with its own words, and a malformed request on the socket gets an
// error naming the field.
func TestQueueCLIChangesThroughTheRunningBot(t *testing.T) {
	odek, odekBot := binaries(t)
	home := t.TempDir()
	store := home + "/store.db"

	// A dead letter from an earlier life: a job whose process died while
	// it ran alone, with one attempt allowed.
	o := queue.Options{MaxAttempts: 1}
	st, err := estore.Open(store, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dead, _, err := st.Enqueue(ctx, queue.Job{ChatID: 1001, Goal: "please do mark-revived"})
	if err != nil {
		t.Fatal(err)
	}
	// Claimed and left twice: the first death makes it a suspect, the
	// second, while it ran alone, a strike, and one strike is the limit.
	for range 2 {
		if ls, err := st.Claim(ctx, "gone", 1, time.Second); err != nil || len(ls) != 1 {
			t.Fatalf("setup claim: %v %v", ls, err)
		}
		st.Close() // the lease is held: the next Open reclaims it
		if st, err = estore.Open(store, o); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := st.Stats(ctx); s.Dead != 1 {
		t.Fatalf("setup: %+v; want one dead letter", s)
	}
	st.Close()

	slowSeen := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last := r.LastMessage().Content
		if strings.Contains(last, "mark-slow") {
			select {
			case slowSeen <- struct{}{}:
			default:
			}
			select { // runs until canceled (the bot hangs up) or the test ends
			case <-release:
			case <-time.After(60 * time.Second):
			}
			return llmtest.Reply("too late")
		}
		for _, w := range strings.Fields(last) {
			if strings.HasPrefix(w, "mark-") {
				return llmtest.Reply("answer to " + w)
			}
		}
		return llmtest.Reply("no mark")
	})
	tg := bottest.New(t)
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=2",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	}
	start(t, "odek-bot", odekBot, env)
	tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) > 0 })
	cli := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(odek, append([]string{"queue"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	jobID := func(out string) string {
		var r struct {
			JobID string `json:"job_id"`
		}
		if i := strings.Index(out, "{"); i >= 0 {
			_ = json.Unmarshal([]byte(out[i:]), &r)
		}
		return r.JobID
	}

	// Submit: answered by the running bot.
	out, code := cli("submit", "--store", store, "--json", "--chat", "1001", "--key", "k-quick", "please do mark-quick")
	if code != 0 || jobID(out) == "" {
		t.Fatalf("submit --store while the bot runs: exit %d: %s", code, out)
	}
	tg.Wait(t, 30*time.Second, "the submitted job answered", func(s *bottest.Server) bool { return visible(s, 1001, "answer to mark-quick") })

	// The store's own validation, with its words and the CLI's exit code.
	out, code = cli("submit", "--store", store, "--chat", "1001", "--key", strings.Repeat("k", queue.MaxIDLen+1), "please do mark-never")
	if code != 3 || !strings.Contains(out, "idempotency_key must be valid UTF-8 of at most") {
		t.Fatalf("submit of an invalid job through the bot: exit %d: %s; want 3 and the store's error", code, out)
	}

	// Cancel a running job.
	out, code = cli("submit", "--store", store, "--json", "--chat", "1001", "--key", "k-slow", "please do mark-slow")
	slow := jobID(out)
	if code != 0 || slow == "" {
		t.Fatalf("submit of the slow job: exit %d: %s", code, out)
	}
	select {
	case <-slowSeen:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow job never reached the model")
	}
	if out, code := cli("cancel", "--store", store, slow); code != 0 {
		t.Fatalf("cancel --store of a running job: exit %d: %s", code, out)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, code = cli("show", "--store", store, "--json", slow)
		if strings.Contains(out, `"status":"canceled"`) || time.Now().After(deadline) {
			break
		}
	}
	if code != 0 || !strings.Contains(out, `"status":"canceled"`) {
		t.Fatalf("show of the canceled job: exit %d: %s; want its result canceled", code, out)
	}
	if out, code := cli("cancel", "--store", store, slow); code != 1 || !strings.Contains(out, "unknown or already finished") {
		t.Fatalf("second cancel: exit %d: %s; want 1 and the queue's answer", code, out)
	}

	// Requeue the dead letter: it runs again as a new job and is answered.
	if out, code := cli("dead", "--store", store, "--json"); code != 0 || !strings.Contains(out, dead.ID) {
		t.Fatalf("dead --store: exit %d: %s; want %s", code, out, dead.ID)
	}
	out, code = cli("retry", "--store", store, "--json", dead.ID)
	if code != 0 || !strings.Contains(out, `"dead_id":"`+dead.ID+`"`) {
		t.Fatalf("retry --store of a dead letter: exit %d: %s", code, out)
	}
	tg.Wait(t, 30*time.Second, "the retried dead letter answered", func(s *bottest.Server) bool { return visible(s, 1001, "answer to mark-revived") })
	if out, code := cli("retry", "--store", store, dead.ID); code != 1 || !strings.Contains(out, "no dead-lettered job") {
		t.Fatalf("retry of a dead letter already retried: exit %d: %s", code, out)
	}
	if out, code := cli("purge-dead", "--store", store, "--older-than", "0"); code != 0 || !strings.Contains(out, "purged 0") {
		t.Fatalf("purge-dead --store: exit %d: %s", code, out)
	}
	if out, code := cli("stats", "--store", store, "--json"); code != 0 || !strings.Contains(out, `"schedules":{`) || !strings.Contains(out, `"dead":0`) {
		t.Fatalf("stats --store: exit %d: %s; want the schedules and no dead letter", code, out)
	}

	// A malformed request on the socket (another local process): refused,
	// naming the field; nothing is queued.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", estore.SocketPath(store))
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post("http://store/submit", "application/json", strings.NewReader(`{"chat_id":1001,"goal":"please do mark-evil","run_as":"root"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `unknown field \"run_as\"`) {
		t.Fatalf("malformed request: %d %s; want 400 naming the field", resp.StatusCode, b)
	}
	if fi, err := os.Stat(estore.SocketPath(store)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin socket: %v, %v; want mode 0600", fi, err)
	}
	time.Sleep(300 * time.Millisecond) // give a wrongly queued job the chance to show
	for _, m := range tg.Visible(1001) {
		if strings.Contains(m, "mark-evil") || strings.Contains(m, "mark-never") || strings.Contains(m, "too late") {
			t.Errorf("a refused or canceled job reached the chat: %q", m)
		}
	}
	t.Logf("chat: %s", fmt.Sprint(tg.Visible(1001)))
}
