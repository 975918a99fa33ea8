package main_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// chunk is one chat.completion.chunk SSE event in OpenAI's streaming wire
// format ("data: {…}\n\n"; the stream ends with "data: [DONE]").
func chunk(delta, finish string, usage bool) string {
	fin := "null"
	if finish != "" {
		fin = `"` + finish + `"`
	}
	u := ""
	if usage {
		u = `,"usage":{"prompt_tokens":12,"completion_tokens":6,"total_tokens":18}`
	}
	return fmt.Sprintf("data: {\"id\":\"chatcmpl-e2e\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"test-model\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]%s}\n\n", delta, fin, u)
}

// Issue 17, streaming answers in distributed mode: a real `odek worker`
// streams the model's text deltas onto the job's progress stream in
// Redis, the bot shows them with sendMessageDraft while the model is
// still writing, and the formatted answer replaces the draft.
func TestE2EAnswerStreamsFromAWorker(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, chunk(`{"role":"assistant","content":"The answer is"}`, "", false))
		fl.Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, chunk(`{"content":" **forty-two**."}`, "", false))
		fmt.Fprint(w, chunk(`{}`, "stop", true))
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(model.Close)
	in := newInstance(t, model.URL)
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "what is the answer?")
	in.tg.Wait(t, 30*time.Second, "the draft while the model writes", func(s *bottest.Server) bool {
		// The draft passes the run's redactor as a stream, which holds back
		// a tail that may begin a secret: the worker's key starts with "s",
		// so the final "s" waits for the next delta.
		for _, d := range s.Drafts(1001) {
			if d.Text == "The answer is" || d.Text == "The answer i" {
				return true
			}
		}
		return false
	})
	once.Do(func() { close(release) })
	in.tg.Wait(t, 30*time.Second, "the formatted answer", func(s *bottest.Server) bool { return visible(s, 1001, "The answer is forty-two.") })
	for _, m := range in.tg.Messages(1001) {
		if strings.Contains(m.Shown, "forty-two") && !strings.Contains(m.Text, "<b>forty-two</b>") {
			t.Errorf("final answer not formatted: %+v", m)
		}
	}
}

// Voice and /model in distributed mode: the bot transcribes a voice
// message at the configured endpoint, shows the transcript, and the real
// worker runs it with the model chosen by /model, which the worker allows
// through the same ODEK_TELEGRAM_MODELS.
func TestE2EVoiceWithChosenModel(t *testing.T) {
	stt := bottest.NewTranscriber(t)
	stt.Say("count the go files")
	var mu sync.Mutex
	var reqs []llmtest.Recorded
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
		return llmtest.Reply("there are **7**")
	})
	in := newInstance(t, llm.URL, "ODEK_TELEGRAM_MODELS=test-model,big-model",
		"ODEK_TELEGRAM_TRANSCRIBE_URL="+stt.URL(), "ODEK_TELEGRAM_TRANSCRIBE_API_KEY="+stt.Key)
	in.worker("w1")
	in.tg.UserMessage(1001, 1001, "/model big-model")
	in.tg.Wait(t, 30*time.Second, "model chosen", func(s *bottest.Server) bool { return visible(s, 1001, "now uses big-model") })
	in.tg.Send(bottest.Incoming{Chat: 1001, User: 1001, Voice: &bottest.File{Data: []byte("OggS\x00\x02voice")}})
	in.tg.Wait(t, 30*time.Second, "transcript shown", func(s *bottest.Server) bool { return visible(s, 1001, "“count the go files”") })
	in.tg.Wait(t, 30*time.Second, "answer", func(s *bottest.Server) bool { return visible(s, 1001, "there are 7") })
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) == 0 || reqs[0].Model != "big-model" || reqs[0].LastMessage().Content != "count the go files" {
		t.Fatalf("model requests %+v", reqs)
	}
	if r := stt.Requests(); len(r) != 1 || r[0].Model != "whisper-1" || r[0].FileName != "voice.ogg" {
		t.Errorf("transcription requests %+v", r)
	}
}

// A status message on screen when odek-bot is SIGKILLed is not left
// "⏳ Working": in embedded mode the job is in the crash-safe store, runs
// again after the restart, and its answer replaces the status message
// (restored from the state in the store) or the status ledger marks it
// interrupted. The job is not lost.
func TestE2EStatusLeftBySIGKILLIsCleanedAtStart(t *testing.T) {
	_, odekBot := binaries(t)
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	var calls atomic.Int32
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		if calls.Add(1) == 1 {
			arrived <- struct{}{}
			<-release // the first process dies inside this call
			return llmtest.Reply("too late")
		}
		return llmtest.Reply("answered after the restart")
	})
	// Registered after the model server, so it runs before the server's
	// Close, which waits for the held call.
	t.Cleanup(func() { close(release) })
	tg := bottest.New(t)
	home := t.TempDir()
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + llm.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + home, "ODEK_ARTIFACTS_DIR=" + t.TempDir(),
	}
	first := start(t, "odek-bot", odekBot, env)
	tg.UserMessage(1001, 1001, "a long job")
	<-arrived // the job is inside the model call
	tg.Wait(t, 30*time.Second, "status message", func(s *bottest.Server) bool { return visible(s, 1001, "⏳ Working") })
	// The chat's actor writes the ledger entry right after the send, before
	// it renews "typing" or edits the status: wait for one of those.
	sent := len(tg.Calls("sendMessage", "sendChatAction", "editMessageText"))
	tg.WaitCalls(t, 30*time.Second, func(c []bottest.Call) bool { return len(c) > sent }, "sendMessage", "sendChatAction", "editMessageText")
	first.kill()
	if !visible(tg, 1001, "⏳ Working") {
		t.Fatal("the status message is gone before the restart")
	}
	start(t, "odek-bot (restarted)", odekBot, env)
	tg.Wait(t, 30*time.Second, "the job answered after the restart", func(s *bottest.Server) bool {
		return visible(s, 1001, "answered after the restart")
	})
	tg.Wait(t, 30*time.Second, "no Working status left", func(s *bottest.Server) bool { return !visible(s, 1001, "⏳ Working") })
	if visible(tg, 1001, "lost") {
		t.Errorf("the chat was told its job was lost: %q", tg.Visible(1001))
	}
}

// Vision in distributed mode: a photo is saved in the shared artifacts
// volume, the job names it, and the real worker sends it to the model as
// an image_url part of the goal's message (read from the chat's
// directory, never through Redis).
func TestE2EPhotoReachesTheModelAsAnImage(t *testing.T) {
	var mu sync.Mutex
	var reqs []llmtest.Recorded
	llm := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
		return llmtest.Reply("a **cat**")
	})
	in := newInstance(t, llm.URL)
	in.worker("w1")
	jpeg := append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), make([]byte, 200)...)
	in.tg.Send(bottest.Incoming{Chat: 1001, User: 1001, Caption: "what is this?", Photo: &bottest.File{Data: jpeg}})
	in.tg.Wait(t, 60*time.Second, "answer", func(s *bottest.Server) bool { return visible(s, 1001, "a cat") })
	mu.Lock()
	defer mu.Unlock()
	want := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)
	if len(reqs) == 0 || !strings.Contains(string(reqs[0].Body), `"type":"image_url","image_url":{"url":"`+want+`"}`) {
		t.Fatalf("the model request carries no image part of the photo")
	}
	if !strings.HasPrefix(reqs[0].LastMessage().Content, "what is this?") {
		t.Errorf("goal %q", reqs[0].LastMessage().Content)
	}
}
