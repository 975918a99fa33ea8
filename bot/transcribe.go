package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Transcriber turns voice and audio messages into text through an
// OpenAI-compatible speech-to-text endpoint: POST <BaseURL>/audio/transcriptions
// with a multipart/form-data body of a "file" part (the audio, with a
// file name whose extension names its format) and a "model" field,
// answered by a JSON object whose "text" is the transcript (OpenAI's API
// reference, "Create transcription"; the same shape is served by other
// OpenAI-compatible providers).
type Transcriber struct {
	// BaseURL is the endpoint's API root, e.g. https://api.openai.com/v1
	// (the configured model endpoint by default, see odek-bot).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; "" sends none. It
	// is never logged or shown.
	APIKey string
	// Model is the transcription model, e.g. "whisper-1".
	Model string
	// HTTP is the client; nil means one with a 2-minute timeout.
	HTTP *http.Client
}

// ErrNoTranscription is an endpoint that has no /audio/transcriptions
// (it answered 404 or 405).
var ErrNoTranscription = errors.New("the model endpoint offers no speech-to-text (/audio/transcriptions)")

// MaxTranscribeBytes is the largest audio file sent for transcription:
// OpenAI's documented upload limit of 25 MB.
const MaxTranscribeBytes = 25 << 20

// maxTranscriptBytes bounds the endpoint's answer read.
const maxTranscriptBytes = 1 << 20

// audioFormats are the file extensions OpenAI's endpoint accepts (its
// reference lists flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav and webm).
var audioFormats = map[string]bool{".flac": true, ".oga": true, ".mp3": true, ".mp4": true, ".mpeg": true, ".mpga": true, ".m4a": true, ".ogg": true, ".wav": true, ".webm": true}

// audioName picks the file name sent with the audio: the user's when its
// extension is a format the endpoint reads, else one made from the MIME
// type (Telegram voice notes are OGG/Opus). Pure.
func audioName(name, mime string) string {
	ext := strings.ToLower(path.Ext(name))
	if audioFormats[ext] {
		return safeFileName(name)
	}
	switch strings.ToLower(strings.TrimSpace(strings.SplitN(mime, ";", 2)[0])) {
	case "audio/mpeg", "audio/mp3":
		return "audio.mp3"
	case "audio/mp4", "audio/x-m4a", "audio/m4a", "audio/aac":
		return "audio.m4a"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "audio.wav"
	case "audio/flac", "audio/x-flac":
		return "audio.flac"
	case "audio/webm":
		return "audio.webm"
	}
	return "audio.ogg" // voice notes: audio/ogg (Opus)
}

// Transcribe sends audio (named name, of type mime) and returns the
// transcript. A 404 or 405 is ErrNoTranscription; other failures name the
// HTTP status and the endpoint's error message, never the key.
func (t *Transcriber) Transcribe(ctx context.Context, name, mime string, audio []byte) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, audioName(name, mime)))
	if mime == "" {
		mime = "application/octet-stream"
	}
	h.Set("Content-Type", mime)
	fw, err := mw.CreatePart(h)
	if err != nil {
		return "", err
	}
	fw.Write(audio)
	mw.WriteField("model", t.Model)
	mw.WriteField("response_format", "json")
	if err := mw.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(t.BaseURL, "/")+"/audio/transcriptions", &body)
	if err != nil {
		return "", fmt.Errorf("transcription endpoint: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	hc := t.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("transcription request failed: %w", scrubKey(err, t.APIKey))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTranscriptBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the transcription: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return "", fmt.Errorf("%w: HTTP %d", ErrNoTranscription, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(data, &e)
		msg := oneLine(strings.ReplaceAll(e.Error.Message, t.APIKey, "<key>"), 200)
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return "", fmt.Errorf("transcription endpoint answered HTTP %d: %s", resp.StatusCode, msg)
	case len(data) > maxTranscriptBytes:
		return "", fmt.Errorf("the transcription is larger than %d bytes", maxTranscriptBytes)
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Text == nil {
		return "", errors.New("the transcription endpoint's answer has no \"text\"")
	}
	return strings.TrimSpace(cleanText(*out.Text)), nil
}

func scrubKey(err error, key string) error {
	if key == "" || err == nil || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "<key>"))
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
		c.replyTo(ctx, replyTo, tr(lang, "voice.large", HumanBytes(limit)))
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
	case errors.Is(err, ErrNoTranscription):
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
