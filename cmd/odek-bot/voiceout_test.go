package main

import (
	"context"
	"io"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/internal/llm/speech"
)

// The speech endpoint's key rules are the transcription path's: a key is
// only ever sent to the host it was given for.
func TestSpeakerKeyRules(t *testing.T) {
	t.Setenv("ODEK_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("ODEK_BASE_URL", "http://model.example/v1")
	t.Setenv("ODEK_API_KEY", "sk-model-key-0123456789")
	t.Setenv("ODEK_MODEL", "m")
	log := logrus.New()
	log.SetOutput(io.Discard)
	for _, c := range []struct {
		name      string
		e         env
		base, key string
	}{
		{"own URL and key", env{TTSModel: "tts-1", TTSURL: "http://tts.example/v1", TTSKey: "k-tts"}, "http://tts.example/v1", "k-tts"},
		{"the transcription endpoint and its key", env{TTSModel: "tts-1", STTURL: "http://stt.example/v1", STTKey: "k-stt"}, "http://stt.example/v1", "k-stt"},
		{"another host never gets the transcription key", env{TTSModel: "tts-1", TTSURL: "http://tts.example/v1", STTURL: "http://stt.example/v1", STTKey: "k-stt"}, "http://tts.example/v1", ""},
		{"the model endpoint with its key", env{TTSModel: "tts-1"}, "http://model.example/v1", "sk-model-key-0123456789"},
		{"the model endpoint's host only", env{TTSModel: "tts-1", TTSURL: "http://tts.example/v1"}, "http://tts.example/v1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.e.TTSVoice = "alloy"
			s, ok := speaker(context.Background(), c.e, log).(*speech.Speaker)
			if !ok || s.BaseURL != c.base || s.APIKey != c.key || s.Model != "tts-1" || s.Voice != "alloy" {
				t.Fatalf("speaker = %+v, want base %q key %q", s, c.base, c.key)
			}
		})
	}
	if s := speaker(context.Background(), env{TTSModel: "off"}, log); s != nil {
		t.Errorf("off: %v", s)
	}
}
