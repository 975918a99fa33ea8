package bot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

const group = int64(-500)

// jobRecorder is a worker that records every job and answers "ok <goal>".
type jobRecorder struct {
	mu   sync.Mutex
	jobs []queue.Job
}

func recordJobs(t *testing.T, q *queue.Memory) *jobRecorder {
	r := &jobRecorder{}
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		r.mu.Lock()
		r.jobs = append(r.jobs, l.Job)
		r.mu.Unlock()
		return queue.Result{Answer: "answer for " + fmt.Sprint(l.Job.UserID)}
	})
	return r
}

func (r *jobRecorder) all() []queue.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]queue.Job(nil), r.jobs...)
}

// Issue 17 point 8: in a group the bot answers only when addressed (it
// does not rely on privacy mode), answers as a reply to the asking message,
// and gives each member their own session.
func TestGroupAnswersOnlyWhenAddressed(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group}; c.Keywords = []string{"odek"} })
	rec := recordJobs(t, q)
	h.tg.Send(bottest.Incoming{Chat: group, User: alice, Text: "lunch at noon?"})
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "@other_bot do something"})
	_, asked := h.tg.Send(bottest.Incoming{Chat: group, User: alice, Text: "@odek_test_bot summarize the thread"})
	h.waitVisible(group, fmt.Sprintf("answer for %d", alice))
	jobs := rec.all()
	if len(jobs) != 1 || !strings.HasSuffix(jobs[0].Goal, "\n\nsummarize the thread") || strings.Contains(jobs[0].Goal, "@odek_test_bot") {
		t.Fatalf("jobs = %+v, want only the addressed message, mention removed (after the group context: groupctx_test.go)", jobs)
	}
	for _, m := range h.tg.Messages(group) {
		if strings.Contains(m.Shown, "answer for") && m.ReplyTo != asked {
			t.Errorf("answer replies to %d, want the asking message %d", m.ReplyTo, asked)
		}
	}
	// A reply to the bot's message and a keyword address it too.
	var botMsg int
	for _, m := range h.tg.Messages(group) {
		if !m.Deleted {
			botMsg = m.ID
		}
	}
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "and the second part?", ReplyTo: botMsg})
	h.waitVisible(group, fmt.Sprintf("answer for %d", bob))
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "Odek, one more"})
	h.tg.Wait(t, wait, "three jobs", func(*bottest.Server) bool { return len(rec.all()) == 3 })
	jobs = rec.all()
	if jobs[0].SessionID == jobs[1].SessionID || jobs[1].SessionID != jobs[2].SessionID {
		t.Errorf("sessions %q %q %q: want one per member", jobs[0].SessionID, jobs[1].SessionID, jobs[2].SessionID)
	}
}

func TestGroupSessionSharedWhenConfigured(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group}; c.GroupSession = "group" })
	rec := recordJobs(t, q)
	h.tg.Send(bottest.Incoming{Chat: group, User: alice, Text: "@odek_test_bot one"})
	h.waitVisible(group, fmt.Sprintf("answer for %d", alice))
	h.tg.Send(bottest.Incoming{Chat: group, User: bob, Text: "@odek_test_bot two"})
	h.waitVisible(group, fmt.Sprintf("answer for %d", bob))
	if jobs := rec.all(); len(jobs) != 2 || jobs[0].SessionID != jobs[1].SessionID || jobs[0].SessionID != fmt.Sprintf("telegram:%d", group) {
		t.Errorf("jobs %+v: want one shared group session", jobs)
	}
	if _, err := New(Config{Token: bottest.Token, AllowAll: true, GroupSession: "everyone"}, q); err == nil || !strings.Contains(err.Error(), "ODEK_TELEGRAM_GROUP_SESSION") {
		t.Errorf("bad GroupSession: %v", err)
	}
}

// Issue 17 point 7: a document is downloaded into the chat's directory and
// the goal says which file arrived and where; a photo too.
func TestDocumentArrivesInChatDirectory(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	dir := t.TempDir()
	h := startBot(t, q, func(c *Config) { c.ArtifactDir = dir })
	rec := recordJobs(t, q)
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "summarize this",
		Document: &bottest.File{Name: "../../notes.txt", MIME: "text/plain", Data: []byte("meeting notes")}})
	h.waitVisible(alice, "answer for")
	jobs := rec.all()
	if len(jobs) != 1 {
		t.Fatalf("jobs: %+v", jobs)
	}
	goal := jobs[0].Goal
	for _, want := range []string{"summarize this", `"../../notes.txt"`, "text/plain", "uploads/notes.txt"} {
		if !strings.Contains(goal, want) {
			t.Errorf("goal lacks %q: %q", want, goal)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, chatName(t, dir, alice), "uploads", "notes.txt"))
	if err != nil || string(data) != "meeting notes" {
		t.Fatalf("saved file: %q %v", data, err)
	}
	// The same name again does not overwrite the first file.
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Document: &bottest.File{Name: "notes.txt", Data: []byte("v2")}})
	h.tg.Wait(t, wait, "second job", func(*bottest.Server) bool { return len(rec.all()) == 2 })
	if g := rec.all()[1].Goal; !strings.Contains(g, "uploads/notes-2.txt") || !strings.Contains(g, "without a message") {
		t.Errorf("second goal: %q", g)
	}
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "what is this?", Photo: &bottest.File{Data: []byte("\xff\xd8jpeg")}})
	h.tg.Wait(t, wait, "photo job", func(*bottest.Server) bool { return len(rec.all()) == 3 })
	if g := rec.all()[2].Goal; !strings.Contains(g, "photo") || !strings.Contains(g, "image/jpeg") || !strings.Contains(g, "uploads/photo-") {
		t.Errorf("photo goal: %q", g)
	}
}

// A file over the limit gets an answer naming the limit and runs nothing;
// so does a file when the bot has no artifacts directory, and a kind the
// bot cannot take gets a short reply saying what it takes.
func TestMediaTheBotCannotTakeIsAnswered(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	dir := t.TempDir()
	h := startBot(t, q, func(c *Config) { c.ArtifactDir = dir; c.MaxDownloadBytes = 1000 })
	rec := recordJobs(t, q)
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "read it", Document: &bottest.File{Name: "big.bin", Data: make([]byte, 1001)}})
	h.waitVisible(alice, "files up to 1000 B (ODEK_TELEGRAM_MAX_FILE_BYTES)")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Document: &bottest.File{Name: "huge.iso", Size: 25 << 20}})
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Sticker: true})
	h.waitVisible(alice, "I cannot take stickers yet")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Location: true})
	h.waitVisible(alice, "I cannot take locations yet")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Poll: true})
	h.waitVisible(alice, "I cannot take polls yet. I can read text messages, documents")
	if n := strings.Count(strings.Join(h.tg.Visible(alice), "\n"), "files up to"); n != 2 {
		t.Errorf("limit named %d times, want 2: %q", n, h.tg.Visible(alice))
	}
	if jobs := rec.all(); len(jobs) != 0 {
		t.Errorf("jobs ran: %+v", jobs)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, chatName(t, dir, alice), "uploads"))
	if len(entries) != 0 {
		t.Errorf("a refused file was kept: %v", entries)
	}

	h2 := startBot(t, queue.NewMemory(queue.Options{}), nil)
	h2.tg.Send(bottest.Incoming{Chat: alice, User: alice, Document: &bottest.File{Name: "a.txt", Data: []byte("x")}})
	h2.waitVisible(alice, "cannot receive files")
	_ = time.Second
}

func TestStripMention(t *testing.T) {
	for in, want := range map[string]string{
		"@odek_test_bot summarize": "summarize", "please @ODEK_test_bot do\n\nthis:\n- a": "please do\n\nthis:\n- a",
		"@odek_test_botty x": "@odek_test_botty x", "no mention": "no mention", "Ä@odek_test_bot": "Ä",
	} {
		if got := stripMention(in, "odek_test_bot"); got != want {
			t.Errorf("stripMention(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSafeFileName(t *testing.T) {
	for in, want := range map[string]string{
		"notes.txt": "notes.txt", "../../etc/passwd": "passwd", `C:\x\y.doc`: "y.doc", ".bashrc": "bashrc",
		"": "file", "..": "file", "a\x00b\nc": "ab_c", "<x>.txt": "_x_.txt",
		strings.Repeat("n", 300) + ".pdf": strings.Repeat("n", 96) + ".pdf",
	} {
		if got := safeFileName(in); got != want {
			t.Errorf("safeFileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Issue 17 point 10 and "Files in": a paste Telegram split into several
// messages is one job, and so is an album.
func TestSplitPasteAndAlbumAreOneJob(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.ArtifactDir = t.TempDir() })
	rec := recordJobs(t, q)
	part1, part2 := strings.Repeat("a", 4096), "the end of the paste"
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: part1})
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: part2})
	h.waitVisible(alice, "answer for")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "compare these", MediaGroup: "alb1", Photo: &bottest.File{Data: []byte("one")}})
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, MediaGroup: "alb1", Photo: &bottest.File{Data: []byte("two")}})
	h.tg.Wait(t, wait, "album job", func(*bottest.Server) bool { return len(rec.all()) >= 2 })
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "short one"})
	h.tg.Wait(t, wait, "third job", func(*bottest.Server) bool { return len(rec.all()) >= 3 })
	jobs := rec.all()
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	if jobs[0].Goal != part1+"\n\n"+part2 {
		t.Errorf("paste goal is %d bytes, want both parts", len(jobs[0].Goal))
	}
	if g := jobs[1].Goal; !strings.HasPrefix(g, "compare these\n\n[Attachment:") || strings.Count(g, "[Attachment:") != 2 || strings.Contains(g, "without a message") {
		t.Errorf("album goal: %q", g)
	}
	if jobs[2].Goal != "short one" {
		t.Errorf("short message goal: %q", jobs[2].Goal)
	}
}

// Files out: the job's first artifacts are sent into the chat with the
// answer, images as photos and other files as documents, up to the
// configured count; the rest keep their /artifact line.
func TestArtifactsSentWithTheAnswer(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	dir := t.TempDir()
	chatDir := filepath.Join(dir, chatName(t, dir, alice))
	os.MkdirAll(chatDir, 0o700)
	files := map[string]string{"chart.png": "\x89PNG fake", "report.md": "# report", "data.csv": "a,b", "more.txt": "more"}
	var metas []queue.ArtifactMeta
	for _, name := range []string{"chart.png", "report.md", "data.csv", "more.txt"} {
		os.WriteFile(filepath.Join(chatDir, name), []byte(files[name]), 0o600)
		mime := "text/plain"
		if strings.HasSuffix(name, ".png") {
			mime = "image/png"
		}
		metas = append(metas, queue.ArtifactMeta{Path: chatName(t, dir, alice) + "/" + name, Name: name, MIME: mime, Bytes: int64(len(files[name]))})
	}
	h := startBot(t, q, func(c *Config) { c.ArtifactDir = dir })
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "Made four files.", Artifacts: metas}
	})
	h.tg.UserMessage(alice, alice, "make files")
	h.waitVisible(alice, "Made four files.")
	h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) == 3 }, "sendPhoto", "sendDocument")
	photos, docs := h.tg.Calls("sendPhoto"), h.tg.Calls("sendDocument")
	if len(photos) != 1 || photos[0].FileName != "chart.png" || string(photos[0].File) != files["chart.png"] {
		t.Errorf("photos: %+v", photos)
	}
	if len(docs) != 2 || docs[0].FileName != "report.md" || docs[1].FileName != "data.csv" {
		t.Errorf("documents: %+v", docs)
	}
	if !hasText(h.tg.Visible(alice), "📎 a4 · more.txt") {
		t.Errorf("the fourth artifact lost its line: %q", h.tg.Visible(alice))
	}
	h.tg.UserMessage(alice, alice, "/artifact a4")
	h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) == 3 }, "sendDocument")
}

// FuzzUntrustedInput: the parsers of what users and workers send — file
// names, approval questions, mentions in message text — never panic, and
// keep their promises: a safe name is one path element without control
// characters or a leading dot; an approval text has no control
// characters other than line breaks.
func FuzzUntrustedInput(f *testing.F) {
	f.Add("notes.txt", shellQuestion, "@odek_test_bot hi", 0, 14)
	f.Add("../../x", "odek: allow x (, =, a=b, c)? [y/N]", "😀 @Odek_Test_Bot", 3, 15)
	f.Add("\x00\xff.\u2028", "odek: allow (", "@", 5, 100)
	f.Fuzz(func(t *testing.T, name, question, text string, off, length int) {
		n := safeFileName(name)
		if n == "" || strings.ContainsAny(n, "/\\\x00\n\r") || strings.HasPrefix(n, ".") || len([]rune(n)) > 100 {
			t.Fatalf("safeFileName(%q) = %q", name, n)
		}
		a := approvalText(question)
		if strings.ContainsFunc(a, func(r rune) bool { return r < 0x20 && r != '\n' }) {
			t.Fatalf("approvalText(%q) = %q", question, a)
		}
		_ = stripMention(text, "odek_test_bot")
		_ = entityText(text, tgbotapi.MessageEntity{Type: "mention", Offset: off, Length: length})
	})
}

// Admins-only commands: in a group, a configured command is refused to a
// member who is no admin and runs for an admin; private chats are not
// affected.
func TestAdminOnlyCommandsInGroups(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.AllowedChats = []int64{group}; c.AdminCommands = []string{"new"} })
	h.tg.SetAdmin(group, alice)
	h.tg.UserMessage(group, bob, "/new")
	h.waitVisible(group, "Only this group's admins can use /new here.")
	h.tg.UserMessage(group, alice, "/new")
	h.waitVisible(group, "New conversation")
	h.tg.UserMessage(bob, bob, "/new")
	h.waitVisible(bob, "New conversation")
}
