package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
)

var jobMark = regexp.MustCompile(`job-(\d+)-(\d+)`)

// TestE2EEmbeddedSurvivesSIGKILL is the embedded store's crash test: a real
// odek-bot in embedded mode gets 30 jobs in 5 chats from the fake Bot API
// and answers them with the fake model, and is SIGKILLed at 20 random
// points and restarted each time on the same ODEK_HOME. In the end every
// job is answered exactly once, each chat's answers come in the order its
// messages were sent, no chat is told a request was lost, and no
// "⏳ Working" status message is left.
func TestE2EEmbeddedSurvivesSIGKILL(t *testing.T) {
	_, odekBot := binaries(t)
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		// The request holds the chat's conversation: the job's own goal
		// is the mark with the highest number (a re-run after a kill may
		// add messages after it).
		b, _ := json.Marshal(r.Messages)
		best, bestN := "", -1
		for _, m := range jobMark.FindAllStringSubmatch(string(b), -1) {
			if n, _ := strconv.Atoi(m[2]); n > bestN {
				best, bestN = m[0], n
			}
		}
		if best == "" {
			return llmtest.Reply("no job mark")
		}
		time.Sleep(30 * time.Millisecond) // the model's work: kills land inside runs too
		return llmtest.Reply("answer to " + best)
	})
	tg := bottest.New(t)
	home := t.TempDir()
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001,1002,1003,1004,1005", "ODEK_WORKERS=2",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
		// A kill every 0.75 s on average often lands while a reclaimed
		// job reruns alone, which counts as a strike (the job may be what
		// kills the process); three would dead-letter healthy jobs here.
		// TestProcessKillingJobIsDeadLettered covers that path.
		"ODEK_QUEUE_MAX_ATTEMPTS=1000",
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	const chats, perChat, kills = 5, 6, 20
	sent := 0
	send := func(n int) {
		for ; n > 0 && sent < chats*perChat; n-- {
			chat := int64(1001 + sent%chats)
			tg.UserMessage(chat, chat, fmt.Sprintf("please do job-%d-%d", chat, sent/chats))
			sent++
		}
	}
	send(10)
	for k := 0; k < kills; k++ {
		p := start(t, fmt.Sprintf("odek-bot #%d", k), odekBot, env)
		send(1)
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond) // a random point of this life
		send(1)
		p.kill()
	}
	send(chats * perChat)
	start(t, "odek-bot (last)", odekBot, env)
	answers := func() map[string][]int {
		out := map[string][]int{}
		for c := int64(1001); c < 1001+chats; c++ {
			for _, m := range tg.Messages(c) {
				if mk := jobMark.FindString(m.Shown); mk != "" && strings.HasPrefix(m.Shown, "answer to") {
					out[mk] = append(out[mk], m.ID)
				}
			}
		}
		return out
	}
	for deadline := time.Now().Add(120 * time.Second); len(answers()) < chats*perChat && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // polling with a deadline
	}
	got := answers()
	dups := 0
	for c := int64(1001); c < 1001+chats; c++ {
		last := 0
		for i := range perChat {
			mk := fmt.Sprintf("job-%d-%d", c, i)
			ids := got[mk]
			if len(ids) == 0 {
				t.Errorf("%s was never answered", mk)
				continue
			}
			if ids[0] < last {
				t.Errorf("chat %d: %s answered before the job sent ahead of it", c, mk)
			}
			// A second copy can only be the same answer sent again at the
			// restart after a kill between Telegram accepting it and its
			// sent record reaching the disk (one fsync): right after the
			// first one, before the chat's next answer.
			for _, id := range ids[1:] {
				dups++
				if i+1 < perChat && len(got[fmt.Sprintf("job-%d-%d", c, i+1)]) > 0 && id > got[fmt.Sprintf("job-%d-%d", c, i+1)][0] {
					t.Errorf("%s answered again after the chat's next answer: not a resend of an unacknowledged delivery", mk)
				}
			}
			last = ids[len(ids)-1]
		}
		for _, v := range tg.Visible(c) {
			if strings.Contains(v, "⏳") {
				t.Errorf("chat %d: a status message is left: %q", c, v)
			}
			if strings.Contains(v, "lost") {
				t.Errorf("chat %d was told a request was lost: %q", c, v)
			}
		}
	}
	// Each kill can catch at most one delivery per chat in that window.
	if dups > kills {
		t.Errorf("%d answers sent twice in %d kills", dups, kills)
	}
	t.Logf("%d of %d answers were sent twice (a kill between Telegram accepting the answer and its sent record on disk)", dups, chats*perChat)
	if t.Failed() {
		for c := int64(1001); c < 1001+chats; c++ {
			t.Logf("chat %d: %q", c, tg.Visible(c))
		}
	}
}

// TestE2ESecondBotOnOneHomeRefused: a second odek-bot on the same
// ODEK_HOME refuses to start, naming the running one's pid, and the first
// keeps working.
func TestE2ESecondBotOnOneHomeRefused(t *testing.T) {
	_, odekBot := binaries(t)
	llm := llmtest.New(t, llmtest.Reply("still here"))
	tg := bottest.New(t)
	home := t.TempDir()
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	}
	first := start(t, "odek-bot", odekBot, env)
	tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) > 0 }, "setMyCommands")
	second := start(t, "odek-bot (second)", odekBot, env)
	select {
	case <-second.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the second odek-bot on the same ODEK_HOME did not exit")
	}
	want := fmt.Sprintf("is in use by process %d", first.cmd.Process.Pid)
	if code := second.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(second.out.String(), want) {
		t.Fatalf("second odek-bot: exit %d, output %q; want a failure saying %q", code, second.out.String(), want)
	}
	tg.UserMessage(1001, 1001, "hello")
	tg.Wait(t, 30*time.Second, "the first bot still answers", func(s *bottest.Server) bool { return visible(s, 1001, "still here") })
}

// TestQueueCLIOnTheStore: `odek queue … --store` works on the embedded
// store while odek-bot is stopped; while it runs they ask the bot through
// its admin socket; a job submitted that way is run by
// the bot at its start; a store held by a process without a socket gives
// an error that names both failures.
func TestQueueCLIOnTheStore(t *testing.T) {
	odek, odekBot := binaries(t)
	llm := llmtest.New(t, llmtest.Reply("from the cli job"))
	tg := bottest.New(t)
	home := t.TempDir()
	store := home + "/store.db"
	cli := func(args ...string) (string, int) {
		cmd := exec.Command(odek, append([]string{"queue"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := cli("submit", "--store", store, "--json", "--chat", "1001", "--key", "k1", "say it")
	var submitted struct {
		JobID string `json:"job_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &submitted) != nil || submitted.JobID == "" {
		t.Fatalf("submit --store: exit %d: %s", code, out)
	}
	if out, code := cli("stats", "--store", store, "--json"); code != 0 || !strings.Contains(out, `"queued":1`) {
		t.Fatalf("stats --store: exit %d: %s; want one queued job", code, out)
	}
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	}
	bot := start(t, "odek-bot", odekBot, env)
	tg.Wait(t, 30*time.Second, "the CLI's job answered by the bot", func(s *bottest.Server) bool { return visible(s, 1001, "from the cli job") })
	// Read commands go through the running bot's admin socket; commands
	// that change the queue are refused, naming the bot's pid.
	// The answer is visible before its result is acknowledged: wait for
	// the acknowledgement to show in the live stats.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, code = cli("stats", "--store", store, "--json")
		if code != 0 || strings.Contains(out, `"results":0`) || time.Now().After(deadline) {
			break
		}
	}
	if code != 0 || !strings.Contains(out, `"queued":0`) || !strings.Contains(out, `"results":0`) {
		t.Fatalf("stats --store while the bot runs: exit %d: %s; want the bot's live stats", code, out)
	}
	if out, code := cli("show", "--store", store, submitted.JobID); code != 0 || !strings.Contains(out, "succeeded") || !strings.Contains(out, "from the cli job") {
		t.Fatalf("show --store while the bot runs: exit %d: %s; want the finished job", code, out)
	}
	if out, code := cli("dead", "--store", store, "--json"); code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("dead --store while the bot runs: exit %d: %q; want no dead letters", code, out)
	}
	// Commands that change the queue go through the socket too (more in
	// store_admin_e2e_test.go): a finished job cannot be canceled.
	out, code = cli("cancel", "--store", store, submitted.JobID)
	if code != 1 || !strings.Contains(out, "unknown or already finished") {
		t.Fatalf("cancel --store of a finished job while the bot runs: exit %d: %s; want 1 and the queue's answer", code, out)
	}
	// A hot backup goes through the running bot's admin socket; the copy
	// holds the job the bot ran.
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if out, code := cli("backup", "--store", store, copyPath); code != 0 || !strings.Contains(out, "(checked)") {
		t.Fatalf("backup --store while the bot runs: exit %d: %s", code, out)
	}
	if out, code := cli("show", "--store", copyPath, submitted.JobID); code != 0 || !strings.Contains(out, "from the cli job") {
		t.Fatalf("show on the backup: exit %d: %s; want the job with its answer", code, out)
	}
	bot.kill()
	if out, code := cli("backup", "--store", store, copyPath); code != 0 || !strings.Contains(out, "(checked)") {
		t.Fatalf("backup --store of a stopped bot's store: exit %d: %s", code, out)
	}
	if out, code := cli("stats", "--store", store, "--json"); code != 0 || !strings.Contains(out, `"queued":0`) {
		t.Fatalf("stats --store of a stopped bot's store: exit %d: %s", code, out)
	}
	// Held by a process with no admin socket (this test): neither the
	// store nor a socket works, and the error says both.
	held, err := estore.Open(store, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	out, code = cli("stats", "--store", store)
	if want := fmt.Sprintf("in use by process %d", os.Getpid()); code != 69 || !strings.Contains(out, want) || !strings.Contains(out, "admin socket does not answer") {
		t.Fatalf("stats --store of a store held without a socket: exit %d: %s; want 69, %q and the socket's failure", code, out, want)
	}
}

// BenchmarkStartWith10kFinished: odek-bot's start-up in embedded mode, from
// exec to its first Bot API call, on a store holding 10,000 finished and
// delivered jobs (sub-benchmark "10k") and on an empty one ("empty"); the
// difference is the store's share (target ≤ 200 ms in all).
func BenchmarkStartWith10kFinished(b *testing.B) {
	_, odekBot := binaries(b)
	for _, tc := range []struct {
		name string
		jobs int
	}{{"empty", 0}, {"10k", 10000}} {
		b.Run(tc.name, func(b *testing.B) {
			home := b.TempDir()
			fillStore(b, filepath.Join(home, "store.db"), tc.jobs)
			llm := llmtest.New(b)
			for b.Loop() {
				tg := bottest.New(b)
				cmd := exec.Command(odekBot)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(),
					"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
					"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
					"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
					"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + b.TempDir()}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				tg.WaitCalls(b, 30*time.Second, func(c []bottest.Call) bool { return len(c) > 0 })
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "start-ms")
				b.StopTimer()
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
				b.StartTimer()
			}
		})
	}
}

// fillStore puts n finished, delivered jobs into a new store at path.
func fillStore(b *testing.B, path string, n int) {
	s, err := estore.Open(path, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for p := range 50 {
		wg.Go(func() {
			for i := range n / 50 {
				if _, _, err := s.Enqueue(ctx, queue.Job{ChatID: int64(2000 + p), Goal: "job", IdempotencyKey: fmt.Sprint(p, "-", i)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for done := 0; done < n; {
		ls, err := s.Claim(ctx, "w", 64, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range ls {
			wg.Go(func() { _ = s.Ack(ctx, l, queue.Result{Answer: "done"}) })
		}
		wg.Wait()
		done += len(ls)
		ds, _ := s.ReadResults(ctx, "bot", 1000, 0)
		for _, d := range ds {
			wg.Go(func() { _ = s.AckResult(ctx, d) })
		}
		wg.Wait()
	}
	for {
		ds, _ := s.ReadResults(ctx, "bot", 1000, 0)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			_ = s.AckResult(ctx, d)
		}
	}
}
