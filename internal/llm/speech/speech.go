// Package speech is the model endpoint's speech side, beside the
// chat-completions client (internal/llm): Transcriber turns audio into text
// through an OpenAI-compatible /audio/transcriptions endpoint. Front ends
// reach it only through an interface of their own (bot.Transcriber), so a
// front end that must not talk to the model endpoint (the compose bot,
// deliberately given no model key) simply leaves it unset.
//
// A Transcriber is safe for concurrent use; it holds no connection of its
// own beyond its http.Client's pool.
package speech

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
	"unicode"
)

// Transcriber turns voice and audio into text through an
// OpenAI-compatible speech-to-text endpoint: POST <BaseURL>/audio/transcriptions
// with a multipart/form-data body of a "file" part (the audio, with a
// file name whose extension names its format) and a "model" field,
// answered by a JSON object whose "text" is the transcript (OpenAI's API
// reference, "Create transcription"; the same shape is served by other
// OpenAI-compatible providers).
type Transcriber struct {
	// BaseURL is the endpoint's API root, e.g. https://api.openai.com/v1.
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
// (it answered 404 or 405). Errors that wrap it also report
// Unsupported() == true, so a caller can recognise it without importing
// this package.
var ErrNoTranscription = errors.New("the model endpoint offers no speech-to-text (/audio/transcriptions)")

// unsupportedError wraps ErrNoTranscription with the HTTP status.
type unsupportedError struct{ status int }

func (e unsupportedError) Error() string {
	return fmt.Sprintf("%v: HTTP %d", ErrNoTranscription, e.status)
}
func (e unsupportedError) Unwrap() error     { return ErrNoTranscription }
func (e unsupportedError) Unsupported() bool { return true }

// MaxAudioBytes is the largest audio file sent for transcription:
// OpenAI's documented upload limit of 25 MB.
const MaxAudioBytes = 25 << 20

// maxTranscriptBytes bounds the endpoint's answer read.
const maxTranscriptBytes = 1 << 20

// maxErrorShown caps the endpoint's error message quoted in an error, in
// characters.
const maxErrorShown = 200

// audioFormats are the file extensions OpenAI's endpoint accepts (its
// reference lists flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav and webm).
var audioFormats = map[string]bool{".flac": true, ".oga": true, ".mp3": true, ".mp4": true, ".mpeg": true, ".mpga": true, ".m4a": true, ".ogg": true, ".wav": true, ".webm": true}

// AudioName picks the file name sent with the audio: the caller's (its
// base name, with every byte outside [A-Za-z0-9._-] replaced) when its
// extension is a format the endpoint reads, else one made from the MIME
// type (Telegram voice notes are OGG/Opus). Pure.
func AudioName(name, mime string) string {
	if ext := strings.ToLower(path.Ext(name)); audioFormats[ext] {
		base := path.Base(strings.ReplaceAll(name, `\`, "/"))
		clean := []rune(strings.Map(func(r rune) rune {
			if r < unicode.MaxASCII && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
				return r
			}
			return '_'
		}, base))
		if len(clean) > 100 {
			clean = clean[len(clean)-100:]
		}
		if s := strings.TrimLeft(string(clean), "."); s != "" && s != ext[1:] {
			return s
		}
		return "audio" + ext
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
// transcript, trimmed. A 404 or 405 is ErrNoTranscription; other failures
// name the HTTP status and the endpoint's error message, never the key.
func (t *Transcriber) Transcribe(ctx context.Context, name, mime string, audio []byte) (string, error) {
	if len(audio) > MaxAudioBytes {
		return "", fmt.Errorf("speech: audio of %d bytes (limit %d)", len(audio), MaxAudioBytes)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, AudioName(name, mime)))
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
	status, data, err := post(ctx, t.HTTP, "transcription", t.BaseURL, "/audio/transcriptions", t.APIKey, mw.FormDataContentType(), "application/json", &body, maxTranscriptBytes)
	if err != nil {
		return "", err
	}
	return parseAnswer(status, data, t.APIKey)
}

// parseAnswer reads the endpoint's answer (status and at most
// maxTranscriptBytes+1 bytes of body): the transcript, or an error that
// names the status and the endpoint's message with key masked. Pure.
func parseAnswer(status int, data []byte, key string) (string, error) {
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		return "", unsupportedError{status}
	case status != http.StatusOK:
		return "", endpointError("transcription", status, data, key)
	case len(data) > maxTranscriptBytes:
		return "", fmt.Errorf("the transcription is larger than %d bytes", maxTranscriptBytes)
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Text == nil {
		return "", errors.New("the transcription endpoint's answer has no \"text\"")
	}
	return strings.TrimSpace(strings.ToValidUTF8(*out.Text, "\uFFFD")), nil
}

// oneLine folds whitespace runs (newlines included) to one space, drops
// other control characters and clips to max characters. Pure.
func oneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func scrubKey(err error, key string) error {
	if key == "" || err == nil || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "<key>"))
}

// endpointError is a failed answer of the endpoint (what: "transcription"
// or "speech"): the status and the endpoint's own message, on one bounded
// line, with key masked. The key is masked after oneLine, which may join a
// key split by control characters or spaces.
func endpointError(what string, status int, data []byte, key string) error {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(data, &e)
	msg := oneLine(e.Error.Message, 1<<16)
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "<key>")
	}
	msg = oneLine(msg, maxErrorShown)
	if msg == "" {
		msg = http.StatusText(status)
	}
	return fmt.Errorf("%s endpoint answered HTTP %d: %s", what, status, msg)
}

// post sends body to base+path (what names the endpoint in errors) with
// the key as a bearer token, and returns the status and at most limit+1
// bytes of the answer. hc nil is a client with a 2-minute timeout; a
// failed request's error never holds the key.
func post(ctx context.Context, hc *http.Client, what, base, path, key, ctype, accept string, body io.Reader, limit int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+path, body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s endpoint: %w", what, err)
	}
	req.Header.Set("Content-Type", ctype)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s request failed: %w", what, scrubKey(err, key))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the %s: %w", what, err)
	}
	return resp.StatusCode, data, nil
}
