package bot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/odekrun/odek/bot/tgformat"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Transcriber turns a voice or audio message into text. It is the only
// way the bot reaches a model endpoint, and it may be left unset (voice
// messages are then declined with a reply saying so): the compose bot,
// deliberately given no model key, runs without one. odek-bot's is
// internal/llm/speech's, beside the LLM client.
//
// An error that reports Unsupported() == true (through errors.As) means
// the endpoint offers no speech-to-text at all; other errors are shown to
// the user, so they must not carry secrets.
type Transcriber interface {
	Transcribe(ctx context.Context, name, mime string, audio []byte) (string, error)
}

// MaxTranscribeBytes is the largest audio file sent for transcription:
// OpenAI's documented upload limit of 25 MB.
const MaxTranscribeBytes = 25 << 20

// unsupported reports whether err says the endpoint has no speech-to-text.
func unsupported(err error) bool {
	var u interface{ Unsupported() bool }
	return errors.As(err, &u) && u.Unsupported()
}

// maxTranscriptShown caps the transcript echoed to the chat, in characters.
const maxTranscriptShown = 3500

// voiceFile returns the file of a voice or audio message.
func voiceFile(m *tgbotapi.Message) (fileID, name, mime string, size int64, voice, ok bool) {
	switch {
	case m.Voice != nil:
		v := m.Voice
		return v.FileID, "voice.ogg", v.MimeType, int64(v.FileSize), true, true
	case m.Audio != nil:
		a := m.Audio
		return a.FileID, a.FileName, a.MimeType, int64(a.FileSize), false, true
	}
	return "", "", "", 0, false, false
}

// transcribe downloads a voice or audio message, transcribes it and shows
// the transcript back to the user (as a reply to it) before the job runs.
// It returns the job's text: the transcript of a voice message, or a note
// and the transcript of an audio file; "" when it could not, after telling
// the user why. It runs in the chat's actor.
func (c *chat) transcribe(ctx context.Context, lang string, m *tgbotapi.Message, replyTo int) string {
	b := c.b
	fileID, name, mime, size, voice, _ := voiceFile(m)
	if b.cfg.Transcriber == nil {
		c.replyTo(ctx, replyTo, tr(lang, "voice.off"))
		return ""
	}
	limit := min(b.cfg.MaxDownloadBytes, MaxTranscribeBytes)
	if size > limit {
		c.replyTo(ctx, replyTo, tr(lang, "voice.large", tgformat.HumanBytes(limit)))
		return ""
	}
	b.tg.Call(ctx, tgbotapi.NewChatAction(c.id, tgbotapi.ChatTyping), false)
	var buf bytes.Buffer
	if _, err := b.tg.Download(ctx, fileID, limit, &buf); err != nil {
		b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: downloading a voice message failed")
		c.replyTo(ctx, replyTo, tr(lang, "file.fetch"))
		return ""
	}
	text, err := b.cfg.Transcriber.Transcribe(ctx, name, mime, buf.Bytes())
	switch {
	case unsupported(err):
		b.log.WithError(err).Warn("bot: the transcription endpoint has no /audio/transcriptions; set ODEK_TELEGRAM_TRANSCRIBE_URL or turn voice off")
		c.replyTo(ctx, replyTo, tr(lang, "voice.none"))
		return ""
	case err != nil:
		b.log.WithError(err).WithField("chat_id", c.id).Warn("bot: transcribing a voice message failed")
		c.replyTo(ctx, replyTo, tr(lang, "voice.failed", oneLine(err.Error(), 200)))
		return ""
	case text == "":
		c.replyTo(ctx, replyTo, tr(lang, "voice.empty"))
		return ""
	}
	text = cleanText(text)
	shown := text
	if r := []rune(shown); len(r) > maxTranscriptShown {
		shown = string(r[:maxTranscriptShown]) + "…"
	}
	c.replyTo(ctx, m.MessageID, tr(lang, "voice.heard", shown))
	if voice {
		return text
	}
	return fmt.Sprintf("[The user sent the audio file %q; its transcript follows.]\n%s", oneLine(m.Audio.FileName, 100), text)
}
