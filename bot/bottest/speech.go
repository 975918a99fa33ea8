package bottest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Speech is a loopback fake of an OpenAI-compatible text-to-speech
// endpoint, strict about the request as OpenAI's API reference documents
// it ("Create speech", POST /audio/speech,
// https://platform.openai.com/docs/api-reference/audio/createSpeech):
//
//   - the body is JSON (Content-Type application/json; anything else is a
//     400) with the required fields model, input and voice;
//   - input is at most 4096 characters ("The maximum length is 4096
//     characters"), not empty;
//   - response_format is one of mp3, opus, aac, flac, wav, pcm (default
//     mp3); speed is 0.25–4.0 (default 1.0); instructions does not work
//     with tts-1 or tts-1-hd; stream_format is sse or audio;
//   - any other field is a 400 ("Unrecognized request argument
//     supplied"), a wrong or missing bearer key a 401;
//   - the answer is the audio file's bytes: for opus an OGG stream
//     (Content-Type audio/ogg, starting "OggS"), the container Telegram
//     voice notes need.
type Speech struct {
	srv *httptest.Server
	// Key is the API key the fake expects ("Bearer <Key>").
	Key string

	mu       sync.Mutex
	missing  bool
	fail     int // answer this status to the next requests (0 = none)
	requests []SpeechRequest
}

// SpeechRequest is one request, as parsed, with the status answered.
type SpeechRequest struct {
	Status         int
	Model          string
	Input          string
	Voice          string
	ResponseFormat string
	Speed          float64
	Error          string
}

var speechFormats = map[string]string{"mp3": "audio/mpeg", "opus": "audio/ogg", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm"}

// NewSpeech starts the fake; its API root is URL() (ending in /v1),
// closed at the end of the test.
func NewSpeech(t testing.TB) *Speech {
	f := &Speech{Key: "sk-test-speech"}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/audio/speech", f.serve)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the API root to configure (…/v1).
func (f *Speech) URL() string { return f.srv.URL + "/v1" }

// Missing makes the endpoint answer 404, as one without text-to-speech.
func (f *Speech) Missing() { f.mu.Lock(); f.missing = true; f.mu.Unlock() }

// Fail makes the endpoint answer status (e.g. 500) until Fail(0).
func (f *Speech) Fail(status int) { f.mu.Lock(); f.fail = status; f.mu.Unlock() }

// Requests returns the requests seen so far.
func (f *Speech) Requests() []SpeechRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]SpeechRequest(nil), f.requests...)
}

// SpokenOGG is the audio the fake answers for input: an OGG page header,
// then the input, so a test can tell which text a voice note carries.
func SpokenOGG(input string) []byte {
	return append([]byte("OggS\x00\x02"), []byte(input)...)
}

func (f *Speech) refuse(w http.ResponseWriter, rec *SpeechRequest, status int, msg string) {
	rec.Status, rec.Error = status, msg
	f.mu.Lock()
	f.requests = append(f.requests, *rec)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}

func (f *Speech) serve(w http.ResponseWriter, r *http.Request) {
	var rec SpeechRequest
	f.mu.Lock()
	missing, fail := f.missing, f.fail
	f.mu.Unlock()
	switch {
	case missing:
		f.refuse(w, &rec, http.StatusNotFound, "Not found")
		return
	case r.Method != http.MethodPost:
		f.refuse(w, &rec, http.StatusMethodNotAllowed, "Method not allowed")
		return
	case r.Header.Get("Authorization") != "Bearer "+f.Key:
		f.refuse(w, &rec, http.StatusUnauthorized, "Incorrect API key provided.")
		return
	case fail != 0:
		f.refuse(w, &rec, fail, "The server had an error while processing your request.")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		f.refuse(w, &rec, http.StatusBadRequest, "The request body must be JSON (Content-Type: application/json).")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		f.refuse(w, &rec, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	var body struct {
		Model          *string  `json:"model"`
		Input          *string  `json:"input"`
		Voice          *string  `json:"voice"`
		Instructions   *string  `json:"instructions"`
		ResponseFormat *string  `json:"response_format"`
		Speed          *float64 `json:"speed"`
		StreamFormat   *string  `json:"stream_format"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			f.refuse(w, &rec, http.StatusBadRequest, "Unrecognized request argument supplied: "+strings.Trim(name, `"`))
			return
		}
		f.refuse(w, &rec, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	rec.Model, rec.Input, rec.Voice, rec.ResponseFormat = str(body.Model), str(body.Input), str(body.Voice), str(body.ResponseFormat)
	if body.Speed != nil {
		rec.Speed = *body.Speed
	}
	format := rec.ResponseFormat
	if body.ResponseFormat == nil {
		format = "mp3"
	}
	switch {
	case strings.TrimSpace(rec.Model) == "":
		f.refuse(w, &rec, http.StatusBadRequest, "Missing required parameter: 'model'.")
	case body.Input == nil:
		f.refuse(w, &rec, http.StatusBadRequest, "Missing required parameter: 'input'.")
	case strings.TrimSpace(rec.Input) == "":
		f.refuse(w, &rec, http.StatusBadRequest, "Invalid 'input': empty string.")
	case utf8.RuneCountInString(rec.Input) > 4096:
		f.refuse(w, &rec, http.StatusBadRequest, fmt.Sprintf("Invalid 'input': string too long. Expected a string with maximum length 4096, but got a string with length %d instead.", utf8.RuneCountInString(rec.Input)))
	case strings.TrimSpace(rec.Voice) == "":
		f.refuse(w, &rec, http.StatusBadRequest, "Missing required parameter: 'voice'.")
	case speechFormats[format] == "":
		f.refuse(w, &rec, http.StatusBadRequest, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'.", format))
	case body.Speed != nil && (*body.Speed < 0.25 || *body.Speed > 4):
		f.refuse(w, &rec, http.StatusBadRequest, fmt.Sprintf("Invalid 'speed': %g. Expected a value between 0.25 and 4.0.", *body.Speed))
	case body.Instructions != nil && (rec.Model == "tts-1" || rec.Model == "tts-1-hd"):
		f.refuse(w, &rec, http.StatusBadRequest, "Instructions are not supported for tts-1 or tts-1-hd.")
	case body.StreamFormat != nil && *body.StreamFormat != "sse" && *body.StreamFormat != "audio":
		f.refuse(w, &rec, http.StatusBadRequest, "Invalid 'stream_format': expected 'sse' or 'audio'.")
	default:
		rec.Status = http.StatusOK
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		f.mu.Unlock()
		w.Header().Set("Content-Type", speechFormats[format])
		if format == "opus" {
			w.Write(SpokenOGG(rec.Input))
			return
		}
		w.Write([]byte("ID3 not-ogg " + rec.Input)) // the other formats: not a voice note
	}
}
