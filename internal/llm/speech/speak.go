package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Speaker turns text into a voice note through an OpenAI-compatible
// text-to-speech endpoint: POST <BaseURL>/audio/speech with a JSON body
// {"model", "input", "voice", "response_format": "opus"[, "speed"]},
// answered by the audio file itself (OpenAI's API reference, "Create
// speech": https://platform.openai.com/docs/api-reference/audio/createSpeech).
// "opus" is an OGG container with Opus audio, the only format Telegram
// shows as a voice note (Bot API sendVoice).
type Speaker struct {
	// BaseURL is the endpoint's API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; "" sends none. It
	// is never logged or shown.
	APIKey string
	// Model is the text-to-speech model, e.g. "gpt-4o-mini-tts" or "tts-1".
	Model string
	// Voice is the voice, e.g. "alloy".
	Voice string
	// Speed is the playback speed, 0.25–4.0; 0 leaves the endpoint's
	// default (1.0) and sends none.
	Speed float64
	// HTTP is the client; nil means one with a 2-minute timeout.
	HTTP *http.Client
}

// MaxSpeechInput is the longest input the endpoint takes, in characters
// (OpenAI's reference: "The maximum length is 4096 characters").
const MaxSpeechInput = 4096

// MaxVoiceBytes bounds the audio read back: the Bot API's sendVoice limit
// for uploads (50 MB).
const MaxVoiceBytes = 50 << 20

// ErrNoSpeech is an endpoint that has no /audio/speech (it answered 404 or
// 405). Errors that wrap it also report Unsupported() == true.
var ErrNoSpeech = errors.New("the model endpoint offers no text-to-speech (/audio/speech)")

type noSpeechError struct{ status int }

func (e noSpeechError) Error() string     { return fmt.Sprintf("%v: HTTP %d", ErrNoSpeech, e.status) }
func (e noSpeechError) Unwrap() error     { return ErrNoSpeech }
func (e noSpeechError) Unsupported() bool { return true }

// speechRequest is the JSON body; field names as OpenAI documents them.
type speechRequest struct {
	Model          string   `json:"model"`
	Input          string   `json:"input"`
	Voice          string   `json:"voice"`
	ResponseFormat string   `json:"response_format"`
	Speed          *float64 `json:"speed,omitempty"`
}

// Speak returns text spoken as OGG/Opus. text must be 1–MaxSpeechInput
// characters (the caller bounds it: see bot's speakable); a longer one is
// an error naming the limit, never a silent cut. Failures name the HTTP
// status and the endpoint's message, never the key; a 404 or 405 is
// ErrNoSpeech.
func (s *Speaker) Speak(ctx context.Context, text string) ([]byte, error) {
	n := utf8.RuneCountInString(text)
	switch {
	case strings.TrimSpace(text) == "":
		return nil, errors.New("speech: nothing to speak (input is empty)")
	case n > MaxSpeechInput:
		return nil, fmt.Errorf("speech: input of %d characters (limit %d)", n, MaxSpeechInput)
	case s.Speed != 0 && (s.Speed < 0.25 || s.Speed > 4):
		return nil, fmt.Errorf("speech: speed %g outside 0.25–4.0", s.Speed)
	}
	body := speechRequest{Model: s.Model, Input: text, Voice: s.Voice, ResponseFormat: "opus"}
	if s.Speed != 0 {
		sp := s.Speed
		body.Speed = &sp
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	status, data, err := post(ctx, s.HTTP, "speech", s.BaseURL, "/audio/speech", s.APIKey, "application/json", "", bytes.NewReader(raw), MaxVoiceBytes)
	if err != nil {
		return nil, err
	}
	return parseSpeech(status, data, s.APIKey)
}

// parseSpeech reads the endpoint's answer: OGG audio, or an error naming
// the status and the endpoint's message with key masked. Pure.
func parseSpeech(status int, data []byte, key string) ([]byte, error) {
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		return nil, noSpeechError{status}
	case status != http.StatusOK:
		return nil, endpointError("speech", status, data, key)
	case len(data) > MaxVoiceBytes:
		return nil, fmt.Errorf("the speech is larger than %d bytes", MaxVoiceBytes)
	case !bytes.HasPrefix(data, []byte("OggS")):
		// A voice note must be OGG/Opus; an endpoint that ignored
		// response_format (mp3 by default) would post a broken note.
		return nil, errors.New("the speech endpoint did not answer OGG/Opus audio (response_format \"opus\" ignored?)")
	}
	return data, nil
}
