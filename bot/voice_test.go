package bot

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/llm/speech"
	"github.com/odekrun/odek/queue"
)

// oggVoice stands for a voice note's bytes (an OGG page header, then
// payload); the fake endpoint does not decode audio.
var oggVoice = append([]byte("OggS\x00\x02"), bytes.Repeat([]byte{0x4f}, 2000)...)

// Issue 17, voice in: a voice message is downloaded with getFile, sent to
// the endpoint's /audio/transcriptions as the multipart form OpenAI
// documents, the transcript is shown back as a reply to the voice message
// before the job runs, and the job's goal is the transcript.
func TestVoiceMessageIsTranscribedAndShownFirst(t *testing.T) {
	stt := bottest.NewTranscriber(t)
	stt.Say("please list the files")
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.Transcriber = &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key, Model: "whisper-1"}
	})
	goals := make(chan string, 2)
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		goals <- l.Job.Goal
		return queue.Result{Answer: "here are the files"}
	})
	_, voiceMsg := h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}})
	h.waitVisible(alice, "here are the files")
	if g := <-goals; g != "please list the files" {
		t.Errorf("goal %q, want the transcript", g)
	}
	msgs := h.tg.Messages(alice)
	if len(msgs) < 2 || msgs[0].Shown != "🎙 I heard:\n“please list the files”" || msgs[0].ReplyTo != voiceMsg {
		t.Fatalf("first message %+v, want the transcript replying to the voice message %d", msgs[0], voiceMsg)
	}
	reqs := stt.Requests()
	if len(reqs) != 1 {
		t.Fatalf("transcription requests: %+v", reqs)
	}
	r := reqs[0]
	if r.Status != 200 || r.Model != "whisper-1" || r.FileName != "voice.ogg" || r.FileType != "audio/ogg" || !bytes.Equal(r.Audio, oggVoice) {
		t.Errorf("request %+v (audio %d bytes)", r, len(r.Audio))
	}

	// An audio file keeps its name; the goal says what it was.
	stt.Say("minutes of the meeting")
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Caption: "summarize this", Audio: &bottest.File{Name: "meeting.m4a", MIME: "audio/mp4", Data: oggVoice}})
	h.waitVisible(alice, "“minutes of the meeting”")
	if g := <-goals; !strings.HasPrefix(g, "summarize this\n\n[The user sent the audio file \"meeting.m4a\"") || !strings.HasSuffix(g, "minutes of the meeting") {
		t.Errorf("audio goal %q", g)
	}
	if r := stt.Requests()[1]; r.FileName != "meeting.m4a" {
		t.Errorf("audio file sent as %q", r.FileName)
	}
}

// An endpoint without speech-to-text (404) gets a clear message and no
// job; without a transcriber configured the bot says so too.
func TestVoiceWithoutTranscription(t *testing.T) {
	stt := bottest.NewTranscriber(t)
	stt.Missing()
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.Transcriber = &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key, Model: "whisper-1"}
	})
	h.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}})
	h.waitVisible(alice, "the model endpoint has no speech-to-text (/audio/transcriptions answered 404)")
	h.tg.UserMessage(alice, alice, "/status") // no job was queued for it
	h.waitVisible(alice, "Idle: no job running.")
	h2 := startBot(t, nil, nil)
	h2.tg.Send(bottest.Incoming{Chat: alice, User: alice, Voice: &bottest.File{Data: oggVoice}, Lang: "de"})
	h2.waitVisible(alice, "Sprachnachrichten können bei diesem Bot nicht umgeschrieben werden")
}

// The client side of the wire format: errors name the status and the
// endpoint's message, never the key; the fake refuses what OpenAI does.
func TestTranscriberErrors(t *testing.T) {
	stt := bottest.NewTranscriber(t)
	ctx := context.Background()
	bad := &speech.Transcriber{BaseURL: stt.URL(), APIKey: "sk-wrong-key", Model: "whisper-1"}
	_, err := bad.Transcribe(ctx, "voice.ogg", "audio/ogg", oggVoice)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "sk-wrong-key") {
		t.Errorf("wrong key: %v", err)
	}
	noModel := &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key}
	if _, err := noModel.Transcribe(ctx, "voice.ogg", "audio/ogg", oggVoice); err == nil || !strings.Contains(err.Error(), "Missing required parameter: 'model'") {
		t.Errorf("no model: %v", err)
	}
	good := &speech.Transcriber{BaseURL: stt.URL(), APIKey: stt.Key, Model: "whisper-1"}
	if got, err := good.Transcribe(ctx, "notes.txt", "audio/x-flac", oggVoice); err != nil || got != "hello from the fake" {
		t.Errorf("flac by MIME type: %q, %v", got, err)
	}
	if r := stt.Requests(); r[len(r)-1].FileName != "audio.flac" {
		t.Errorf("name for a .txt audio: %q", r[len(r)-1].FileName)
	}
	stt.Missing()
	if _, err := good.Transcribe(ctx, "voice.ogg", "audio/ogg", oggVoice); !errors.Is(err, speech.ErrNoTranscription) || !unsupported(err) {
		t.Errorf("404: %v", err)
	}
}
