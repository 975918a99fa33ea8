package bot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/speech"
	"github.com/odekrun/odek/queue"
)

// uploads lists what the bot stored in a chat's uploads directory.
func uploads(t *testing.T, dir string, chatID int64) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, chatName(t, dir, chatID), "uploads"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// filled returns n bytes that are not zero (so they take disk blocks).
func filled(n int) []byte { return bytes.Repeat([]byte("odek"), n/4) }

// Issue 21 route 11: an upload is counted against the chat's storage
// quota before it is written. A chat whose directory is nearly full can
// make the bot write nothing more — neither a file whose reported size
// does not fit (refused before getFile) nor one whose size Telegram left
// out (stopped at the quota and removed) — and the refusal names the
// limit; another chat is unaffected.
func TestUploadsCountAgainstTheChatsStorageQuota(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	dir := t.TempDir()
	const quota = 256 << 10
	h := startBot(t, q, func(c *Config) { c.ArtifactDir = dir; c.ChatStorageBytes = quota })
	rec := recordJobs(t, q)
	// alice's jobs have written 224 KiB already.
	if err := os.MkdirAll(filepath.Join(dir, chatName(t, dir, alice)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, chatName(t, dir, alice), "report.bin"), filled(224<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	getFiles := func() int { return len(h.tg.Calls("getFile")) }

	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "read it", Document: &bottest.File{Name: "big.txt", Data: filled(64 << 10)}})
	h.waitVisible(alice, "storage quota (ODEK_TELEGRAM_CHAT_STORAGE_BYTES)")
	if n := getFiles(); n != 0 {
		t.Errorf("a file over the quota by its reported size was fetched (%d getFile calls)", n)
	}
	if got := uploads(t, dir, alice); len(got) != 0 {
		t.Errorf("a file over the quota was stored: %v", got)
	}

	// No file_size: the bot fetches it and stops at the quota.
	before := strings.Count(strings.Join(h.tg.Visible(alice), "\n"), "storage quota")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "and this", Document: &bottest.File{Name: "sneaky.txt", Data: filled(64 << 10), Unsized: true}})
	h.tg.Wait(t, wait, "second quota refusal", func(s *bottest.Server) bool {
		return strings.Count(strings.Join(s.Visible(alice), "\n"), "storage quota") > before
	})
	if got := uploads(t, dir, alice); len(got) != 0 {
		t.Errorf("a file stopped at the quota was kept: %v", got)
	}
	if jobs := rec.all(); len(jobs) != 0 {
		t.Errorf("a refused upload started a job: %+v", jobs)
	}
	root, err := os.OpenRoot(filepath.Join(dir, chatName(t, dir, alice)))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if used, err := diskUsage(root); err != nil || used > quota {
		t.Errorf("alice's directory holds %d bytes (quota %d): %v", used, quota, err)
	}

	// bob's chat has its own quota: the same file is taken.
	h.tg.Send(bottest.Incoming{Chat: bob, User: bob, Caption: "read it", Document: &bottest.File{Name: "big.txt", Data: filled(64 << 10)}})
	h.waitVisible(bob, "answer for")
	if got := uploads(t, dir, bob); len(got) != 1 || got[0] != "big.txt" {
		t.Errorf("bob's upload: %v", got)
	}
}

// Issue 21 route 11: the chat's daily budget and the sender's job rate are
// checked before a file (document, photo, voice) is fetched: over either,
// the bot replies with the limit and never calls getFile; another chat is
// unaffected.
func TestUploadsOverBudgetOrRateAreNotFetched(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	dir := t.TempDir()
	stt := bottest.NewTranscriber(t)
	stt.Say("a transcript")
	h := startBot(t, q, func(c *Config) {
		c.ArtifactDir = dir
		c.UserJobsPerMinute = 2
		c.DailyTokenBudget = 1000
		c.Transcriber = &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key, Model: "whisper-1"}
	})
	worker(t, q, func(_ context.Context, l queue.Lease) queue.Result {
		res := queue.Result{Answer: "answer for " + fmt.Sprint(l.Job.UserID)}
		if strings.Contains(l.Job.Goal, "spend") {
			res.Usage = queue.Usage{PromptTokens: 900, CompletionTokens: 200}
		}
		return res
	})
	// alice's first job this minute spends the chat's day (her rate has
	// room for one more).
	h.tg.UserMessage(alice, alice, "spend it all")
	h.waitVisible(alice, "answer for")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "read it", Document: &bottest.File{Name: "a.txt", Data: []byte("hello")}})
	h.waitVisible(alice, "has used its daily budget of 1,000 tokens")
	// A voice message is not stored, but fetching and transcribing it
	// costs as much: refused the same way.
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}})
	h.tg.Wait(t, wait, "the voice message refused", func(s *bottest.Server) bool {
		return strings.Count(strings.Join(s.Visible(alice), "\n"), "has used its daily budget of 1,000 tokens") == 2
	})
	// bob used his two jobs of the minute.
	h.tg.UserMessage(bob, bob, "hi")
	h.waitVisible(bob, "answer for")
	h.tg.UserMessage(bob, bob, "hi again")
	h.tg.Wait(t, wait, "bob's second answer", func(s *bottest.Server) bool {
		return strings.Count(strings.Join(s.Visible(bob), "\n"), "answer for") == 2
	})
	h.tg.Send(bottest.Incoming{Chat: bob, User: bob, Caption: "read it", Photo: &bottest.File{Data: []byte("\xff\xd8jpeg")}})
	h.waitVisible(bob, "at most 2 new requests per minute")
	if n := len(h.tg.Calls("getFile")); n != 0 {
		t.Errorf("files over a limit were fetched (%d getFile calls)", n)
	}
	for _, c := range []int64{alice, bob} {
		if got := uploads(t, dir, c); len(got) != 0 {
			t.Errorf("chat %d: a file over a limit was stored: %v", c, got)
		}
	}
}

func TestQuotaWriterStopsAtTheQuota(t *testing.T) {
	var buf bytes.Buffer
	w := &quotaWriter{w: &buf, left: 10}
	if n, err := w.Write([]byte("123456")); n != 6 || err != nil {
		t.Fatalf("first write: %d %v", n, err)
	}
	if n, err := w.Write([]byte("78901")); n != 0 || err != errOverQuota || !w.over {
		t.Fatalf("write past the quota: %d %v over=%v", n, err, w.over)
	}
	if n, err := w.Write([]byte("7890")); n != 4 || err != nil || buf.String() != "1234567890" {
		t.Fatalf("write up to the quota: %d %v %q", n, err, buf.String())
	}
}

// BenchmarkDiskUsage is the quota's cost per upload: measuring a chat's
// directory of 1,000 files in 10 directories.
func BenchmarkDiskUsage(b *testing.B) {
	dir := b.TempDir()
	for d := 0; d < 10; d++ {
		sub := filepath.Join(dir, fmt.Sprint("d", d))
		if err := os.Mkdir(sub, 0o700); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprint("f", f)), filled(1024), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := diskUsage(root); err != nil {
			b.Fatal(err)
		}
	}
}
