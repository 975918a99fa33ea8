package bot

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

// Status lines and approval prompts follow the asker's language_code too:
// a German user sees "Arbeitet", "Freigabe nötig", German class words and
// German buttons and outcome.
func TestStatusAndApprovalInTheUsersLanguage(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Iteration: 2})
		a, _ := q.Ask(ctx, queue.Approval{JobID: l.Job.ID, ChatID: l.Job.ChatID, Question: shellQuestion, Deadline: time.Now().Add(2 * time.Minute)})
		q.AwaitAnswer(ctx, a.ID, time.Minute)
		return queue.Result{Answer: "fertig"}
	})
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "bau es", Lang: "de"})
	kb := h.keyboardMessage(alice)
	for _, want := range []string{"🔐 Freigabe nötig", "Der Agent möchte shell verwenden.", "Klasse: code_execution (führt ein Programm aus)", "Nur user1001 kann antworten."} {
		if !strings.Contains(kb.Shown, want) {
			t.Errorf("prompt lacks %q: %q", want, kb.Shown)
		}
	}
	var markup string
	for _, c := range h.tg.Calls("sendMessage") {
		if strings.Contains(c.Params.Get("reply_markup"), "callback_data") {
			markup = c.Params.Get("reply_markup")
		}
	}
	if !strings.Contains(markup, "✅ Einmal erlauben") || !strings.Contains(markup, "❌ Ablehnen") {
		t.Errorf("buttons %s", markup)
	}
	h.waitVisible(alice, "🔐 Wartet auf deine Freigabe · Schritt 2")
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[0][0])
	h.waitVisible(alice, "✅ Einmal erlaubt von user1001.")
	h.waitVisible(alice, "fertig")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Text: "/status", Lang: "de"})
	h.waitVisible(alice, "Untätig: kein Auftrag läuft.")
}

// The status line in German, pure.
func TestStatusTextInGerman(t *testing.T) {
	s := status{started: true, iteration: 3, tool: "shell", detail: "go", planDone: 2, planTotal: 5, tokens: 1234, attempt: 2}
	want := "⏳ Arbeitet · Schritt 3 · 🔧 shell: go · Plan 2/5 · 1,234 Tokens · 12 s · Versuch 2"
	if got := s.textIn("de", 0, 12*time.Second); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (status{}).textIn("de", 2, 0); got != "📥 In der Warteschlange — Position 2. /stop bricht ab." {
		t.Errorf("queued: %q", got)
	}
}

// MCP progress (tool_call_progress events on the progress stream, as the
// worker streams every event) shows in the status line: the share done of
// a known total and the server's message, cleaned and clipped; the next
// tool call clears it.
func TestMCPProgressInTheStatus(t *testing.T) {
	var s status
	s = s.apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_started","seq":1,"run_id":"r","iteration":1,"tool":"docs__search","timestamp":"2026-01-01T00:00:00Z"}`))
	s = s.apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_progress","seq":2,"run_id":"r","iteration":1,"timestamp":"2026-01-01T00:00:00Z","data":{"tool":"docs__search","server":"docs","mcp_tool":"search","progress":3,"total":10,"message":"indexing\nfiles"}}`))
	if got, want := s.text(0, 2*time.Second), "⏳ Working · step 1 · 🔧 docs__search · 30 % · indexing files · 2.0 s"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s = s.apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_progress","seq":3,"run_id":"r","iteration":1,"timestamp":"2026-01-01T00:00:00Z","data":{"tool":"docs__search","progress":7}}`))
	if !strings.Contains(s.text(0, 0), "🔧 docs__search · 7 ·") {
		t.Errorf("progress without total: %q", s.text(0, 0))
	}
	s = s.apply([]byte(`{"schema":"odek.event/v1","type":"tool_call_completed","seq":4,"run_id":"r","iteration":1,"tool":"docs__search","timestamp":"2026-01-01T00:00:00Z"}`))
	if strings.Contains(s.text(0, 0), "7") {
		t.Errorf("progress kept after the call ended: %q", s.text(0, 0))
	}
	if got := mcpProgress(map[string]any{"progress": 5.0, "total": 4.0, "message": strings.Repeat("x", 300)}); !strings.HasPrefix(got, "100 % · ") || len([]rune(got)) > 8+maxMCPMessage {
		t.Errorf("overshoot/long message: %q", got)
	}

	// End to end: the worker's events reach the status message.
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, nil)
	release := make(chan struct{})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		summary(t, q, l.Job.ID, queue.ProgressSummary{State: "started", Iteration: 1})
		event(t, q, l.Job.ID, `{"schema":"odek.event/v1","type":"tool_call_started","seq":1,"run_id":"r","iteration":1,"tool":"docs__search","timestamp":"2026-01-01T00:00:00Z"}`)
		event(t, q, l.Job.ID, `{"schema":"odek.event/v1","type":"tool_call_progress","seq":2,"run_id":"r","iteration":1,"timestamp":"2026-01-01T00:00:00Z","data":{"tool":"docs__search","progress":1,"total":4,"message":"page 1 of 4"}}`)
		<-release
		return queue.Result{Answer: "found it"}
	})
	h.tg.UserMessage(alice, alice, "search the docs")
	h.waitVisible(alice, "🔧 docs__search · 25 % · page 1 of 4")
	close(release)
	h.waitVisible(alice, "found it")
}

// /model: the operator's models as buttons; the choice goes on every later
// job of the chat (queue.Job.Model), /model default clears it, a name not
// offered is refused with the list.
func TestModelChoiceTravelsOnTheJob(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Models = []string{"small-model", "big-model"} })
	models := make(chan string, 4)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		models <- l.Job.Model
		return queue.Result{Answer: "ran " + l.Job.Goal}
	})
	h.tg.UserMessage(alice, alice, "/model")
	kb := h.keyboardMessage(alice)
	if !strings.Contains(kb.Shown, "Model for this chat: the default.") || len(kb.Keyboard) != 2 || kb.Keyboard[1][0] != "md:1" {
		t.Fatalf("/model shows %q %v", kb.Shown, kb.Keyboard)
	}
	h.tg.PressButton(alice, alice, kb.ID, kb.Keyboard[1][0])
	h.waitVisible(alice, "This chat now uses big-model from its next request.")
	h.tg.UserMessage(alice, alice, "one")
	h.waitVisible(alice, "ran one")
	if m := <-models; m != "big-model" {
		t.Errorf("job model %q, want big-model", m)
	}
	h.tg.UserMessage(alice, alice, "/status")
	h.waitVisible(alice, "Model: big-model")
	h.tg.UserMessage(alice, alice, "/model gpt-9000")
	h.waitVisible(alice, `There is no model "gpt-9000" here. Choose one of: small-model, big-model.`)
	h.tg.UserMessage(alice, alice, "/model default")
	h.waitVisible(alice, "default model from its next request")
	h.tg.UserMessage(alice, alice, "two")
	h.waitVisible(alice, "ran two")
	if m := <-models; m != "" {
		t.Errorf("job model after /model default: %q", m)
	}
	if _, ok := parseModelData("md:01"); ok {
		t.Error("md:01 accepted")
	}
	h.tg.PressButton(alice, alice, kb.ID, "md:7") // a forged index
	calls := h.tg.WaitCalls(t, wait, func(c []bottest.Call) bool { return len(c) == 2 }, "answerCallbackQuery")
	if got := calls[1].Params.Get("text"); got != "Unknown button." {
		t.Errorf("forged index answered %q", got)
	}
}

// Without an operator list /model says there is no choice.
func TestModelWithoutChoice(t *testing.T) {
	h := startBot(t, nil, nil)
	h.tg.UserMessage(alice, alice, "/model big")
	h.waitVisible(alice, "This bot offers no choice of model (its operator has not set ODEK_TELEGRAM_MODELS).")
}

// Vision: a photo goes on the job as an image of the chat's directory
// (queue.Job.Images, vision "auto" by default) besides the goal's line; an
// album's photos all go; Vision "false" sends none.
func TestPhotosTravelAsImages(t *testing.T) {
	for _, mode := range []string{"", "false"} {
		q := queue.NewMemory(queue.Options{})
		h := startBot(t, q, func(c *Config) { c.ArtifactDir = t.TempDir(); c.Vision = mode })
		rec := recordJobs(t, q)
		h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "compare", MediaGroup: "a1", Photo: &bottest.File{Data: []byte("\xff\xd8\xffone")}})
		h.tg.Send(bottest.Incoming{Chat: alice, User: alice, MediaGroup: "a1", Photo: &bottest.File{Data: []byte("\xff\xd8\xfftwo")}})
		h.tg.Wait(t, wait, "the album's job", func(*bottest.Server) bool { return len(rec.all()) == 1 })
		j := rec.all()[0]
		if mode == "false" {
			if len(j.Images) != 0 || j.Vision != "" {
				t.Errorf("vision false: images %q vision %q", j.Images, j.Vision)
			}
			continue
		}
		if len(j.Images) != 2 || j.Vision != "auto" || !strings.HasPrefix(j.Images[0], "uploads/photo-") || strings.Contains(j.Images[0], "/"+strconv.FormatInt(alice, 10)) {
			t.Errorf("images %q vision %q", j.Images, j.Vision)
		}
	}
}
