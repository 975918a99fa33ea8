package main

import (
	"context"
	"errors"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/llm/speech"
)

// speaker is the text-to-speech client for /voice (issue 26, point 4):
// POST /audio/speech at ODEK_TELEGRAM_SPEECH_URL, else at the
// transcription endpoint ODEK_TELEGRAM_TRANSCRIBE_URL, else at the model
// endpoint odek's configuration names. The key rules are the
// transcription path's: a key of its own (ODEK_TELEGRAM_SPEECH_API_KEY)
// goes to the speech URL; otherwise the transcription key goes only to the
// transcription host and the model endpoint's key only to the model
// endpoint's own host. nil when turned off or when no endpoint is known
// (logged): /voice then says spoken answers are not available.
func speaker(ctx context.Context, e env, log logrus.FieldLogger) bot.Speaker {
	if strings.EqualFold(e.TTSModel, "off") || e.TTSModel == "" {
		return nil
	}
	declined := func(err error) bot.Speaker {
		log.WithError(err).Warn("odek-bot: no endpoint for spoken answers; /voice is not offered (set ODEK_TELEGRAM_SPEECH_URL and _API_KEY, or ODEK_TELEGRAM_SPEECH_MODEL=off)")
		return nil
	}
	base, key := e.TTSURL, e.TTSKey
	if base == "" && e.STTURL != "" {
		base = e.STTURL
	}
	if key == "" && e.STTKey != "" && e.STTURL != "" && sameHost(base, e.STTURL) {
		key = e.STTKey // the transcription key goes to its own host only
	}
	if base == "" || key == "" {
		cfg, _, err := config.Load(config.Options{})
		if err != nil {
			return declined(err)
		}
		if base == "" && key == "" {
			if err := cfg.ResolveEndpoint(ctx, nil); err != nil {
				return declined(err)
			}
		}
		if base == "" {
			base = cfg.BaseURL
		}
		if base == "" {
			return declined(errors.New("no model endpoint is configured"))
		}
		if key == "" && sameHost(base, cfg.BaseURL) {
			key = cfg.APIKey // the model endpoint's key goes to its own host only
		}
	}
	return &speech.Speaker{BaseURL: base, APIKey: key, Model: e.TTSModel, Voice: e.TTSVoice}
}
