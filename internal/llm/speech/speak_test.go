package speech

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseSpeech(t *testing.T) {
	const key = "sk-secret-0123456789"
	for _, c := range []struct {
		status int
		body   string
		err    string
	}{
		{200, "OggS\x00\x02audio", ""},
		{200, "ID3 an mp3", "did not answer OGG/Opus"},
		{401, `{"error":{"message":"Incorrect API key provided: sk-secret-0123456789"}}`, "HTTP 401: Incorrect API key provided: <key>"},
		{400, `{"error":{"message":"Invalid 'input': string too long."}}`, "HTTP 400: Invalid 'input': string too long."},
		{500, ``, "HTTP 500: Internal Server Error"},
	} {
		out, err := parseSpeech(c.status, []byte(c.body), key)
		switch {
		case c.err == "" && (err != nil || string(out) != c.body):
			t.Errorf("%d %q: %q, %v", c.status, c.body, out, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), key)):
			t.Errorf("%d %q: error %v, want one containing %q without the key", c.status, c.body, err, c.err)
		}
	}
	for _, st := range []int{404, 405} {
		_, err := parseSpeech(st, nil, "")
		var u interface{ Unsupported() bool }
		if !errors.Is(err, ErrNoSpeech) || !errors.As(err, &u) || !u.Unsupported() {
			t.Errorf("HTTP %d: %v, want ErrNoSpeech", st, err)
		}
	}
}

// Bad input is refused before any request, naming the limit.
func TestSpeakBoundsInput(t *testing.T) {
	s := &Speaker{BaseURL: "http://127.0.0.1:1/v1", Model: "tts-1", Voice: "alloy"}
	if _, err := s.Speak(context.Background(), strings.Repeat("x", MaxSpeechInput+1)); err == nil || !strings.Contains(err.Error(), "limit 4096") {
		t.Errorf("long input: %v", err)
	}
	if _, err := s.Speak(context.Background(), "  "); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty input: %v", err)
	}
	s.Speed = 5
	if _, err := s.Speak(context.Background(), "hi"); err == nil || !strings.Contains(err.Error(), "0.25–4.0") {
		t.Errorf("speed 5: %v", err)
	}
}
