package bot

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/speech"
	"github.com/odekrun/odek/queue"
)

func speakerFor(f *bottest.Speech) *speech.Speaker {
	return &speech.Speaker{BaseURL: f.URL(), APIKey: f.Key, Model: "gpt-4o-mini-tts", Voice: "alloy"}
}

// voiceCalls are the accepted sendVoice calls.
func voiceCalls(h *harness) []bottest.Call {
	var out []bottest.Call
	for _, c := range h.tg.Calls("sendVoice") {
		if c.Status == 200 {
			out = append(out, c)
		}
	}
	return out
}

// Issue 26, point 4: with /voice on a short answer is one voice note whose
// caption is the formatted answer (no text message repeats it); the speech
// request has the form OpenAI documents, with the answer's visible text
// (Markdown rendered away) as input and response_format opus.
func TestVoiceOnShortAnswerIsOneCaptionedVoiceNote(t *testing.T) {
	tts := bottest.NewSpeech(t)
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Speaker = speakerFor(tts) })
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "The answer is **42**."}
	})
	h.tg.UserMessage(alice, alice, "/voice on")
	h.waitVisible(alice, "Spoken answers: on")
	h.tg.UserMessage(alice, alice, "what is the answer?")
	h.tg.Wait(t, wait, "a voice note", func(s *bottest.Server) bool { return len(voiceCalls(h)) == 1 })
	reqs := tts.Requests()
	if len(reqs) != 1 || reqs[0].Status != 200 || reqs[0].Input != "The answer is 42." || reqs[0].ResponseFormat != "opus" ||
		reqs[0].Model != "gpt-4o-mini-tts" || reqs[0].Voice != "alloy" {
		t.Fatalf("speech requests %+v", reqs)
	}
	vc := voiceCalls(h)[0]
	if !bytes.Equal(vc.File, bottest.SpokenOGG("The answer is 42.")) || vc.Params.Get("parse_mode") != "HTML" ||
		!strings.Contains(vc.Params.Get("caption"), "<b>42</b>") {
		t.Errorf("sendVoice %v (file %q)", vc.Params, vc.File)
	}
	for _, m := range h.tg.Messages(alice) {
		if strings.Contains(m.Shown, "The answer is") && m.Voice == nil {
			t.Errorf("the answer was also sent as text: %+v", m)
		}
	}
}

// A long answer comes as a voice note without caption and then as text; the
// speech input is bounded to 4096 characters by speakable's rule.
func TestVoiceLongAnswerIsVoicePlusText(t *testing.T) {
	tts := bottest.NewSpeech(t)
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) { c.Speaker = speakerFor(tts); c.Voice = "on" })
	long := strings.Repeat("This sentence is part of a long answer. ", 150) // 6000 characters
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result { return queue.Result{Answer: long} })
	h.tg.UserMessage(alice, alice, "tell me a lot")
	h.waitVisible(alice, "This sentence is part")
	h.tg.Wait(t, wait, "a voice note", func(s *bottest.Server) bool { return len(voiceCalls(h)) == 1 })
	if c := voiceCalls(h)[0]; c.Params.Get("caption") != "" {
		t.Errorf("a long answer's voice note has a caption: %q", c.Params.Get("caption"))
	}
	r := tts.Requests()[0]
	if n := utf8.RuneCountInString(r.Input); r.Status != 200 || n > MaxSpeechInput || n < MaxSpeechInput/2 || !strings.HasSuffix(r.Input, "answer. …") {
		t.Errorf("speech input of %d characters, status %d: …%q", n, r.Status, r.Input[max(0, len(r.Input)-40):])
	}
}

// mirror speaks only answers to voice messages; a failing speech endpoint
// falls back to text with a notice.
func TestVoiceMirrorAndFallback(t *testing.T) {
	tts := bottest.NewSpeech(t)
	stt := bottest.NewTranscriber(t)
	stt.Say("how are you")
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.Speaker = speakerFor(tts)
		c.Transcriber = &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key, Model: "whisper-1"}
	})
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "fine, thanks: " + l.Job.Goal}
	})
	h.tg.UserMessage(alice, alice, "/voice mirror")
	h.waitVisible(alice, "Spoken answers: mirror")
	h.tg.UserMessage(alice, alice, "typed question")
	h.waitVisible(alice, "fine, thanks: typed question")
	if n := len(tts.Requests()); n != 0 {
		t.Fatalf("a typed message's answer was spoken (%d speech requests)", n)
	}
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}})
	h.tg.Wait(t, wait, "a voice note", func(s *bottest.Server) bool { return len(voiceCalls(h)) == 1 })
	if c := voiceCalls(h)[0]; !strings.Contains(c.Params.Get("caption"), "fine, thanks: how are you") {
		t.Errorf("voice caption %q", c.Params.Get("caption"))
	}

	tts.Fail(500)
	stt.Say("and now")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}})
	h.waitVisible(alice, "fine, thanks: and now")
	h.waitVisible(alice, "🔇 The answer could not be spoken (speech endpoint answered HTTP 500")
	if n := len(voiceCalls(h)); n != 1 {
		t.Errorf("%d voice notes after the failure, want still 1", n)
	}
}

// Without a Speaker /voice says spoken answers are not available.
func TestVoiceWithoutSpeaker(t *testing.T) {
	h := startBot(t, nil, nil)
	h.tg.UserMessage(alice, alice, "/voice on")
	h.waitVisible(alice, "Spoken answers are not available")
}

func TestSpeakable(t *testing.T) {
	if s, cut := speakable("  short  "); s != "short" || cut {
		t.Errorf("short: %q %v", s, cut)
	}
	exact := strings.Repeat("a", MaxSpeechInput)
	if s, cut := speakable(exact); s != exact || cut {
		t.Errorf("exactly the limit was cut")
	}
	// A sentence end in the second half wins.
	text := strings.Repeat("word ", 500) + "End here. " + strings.Repeat("more ", 1000)
	s, cut := speakable(text)
	if !cut || !strings.HasSuffix(s, "End here. …") {
		t.Errorf("sentence cut: …%q", s[len(s)-30:])
	}
	// No sentence end: the last space.
	s, _ = speakable(strings.Repeat("abc ", 2000))
	if !strings.HasSuffix(s, "abc …") || utf8.RuneCountInString(s) > MaxSpeechInput {
		t.Errorf("space cut: %d characters, …%q", utf8.RuneCountInString(s), s[len(s)-10:])
	}
	// One endless word: cut at the limit.
	s, _ = speakable(strings.Repeat("ü", 9000))
	if utf8.RuneCountInString(s) != MaxSpeechInput || !utf8.ValidString(s) {
		t.Errorf("hard cut: %d characters", utf8.RuneCountInString(s))
	}
}

func FuzzSpeakable(f *testing.F) {
	for _, s := range []string{"", "hi", strings.Repeat("Ab. ", 1100), strings.Repeat("\n", 5000), strings.Repeat("x", 4097)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, cut := speakable(s)
		if n := utf8.RuneCountInString(out); n > MaxSpeechInput {
			t.Fatalf("%d characters", n)
		}
		if !cut && out != strings.TrimSpace(s) {
			t.Fatalf("uncut text changed")
		}
	})
}
