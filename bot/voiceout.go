package bot

import (
	"context"
	"strings"
	"unicode"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/odekrun/odek/bot/tgformat"
)

// Voice back (issue 26, point 4). A chat chooses with /voice how answers
// come: "off" (text only, the default unless Config.Voice says otherwise),
// "on" (every answer is also spoken) or "mirror" (spoken when the request
// came as a voice message). A spoken answer is one sendVoice: the OGG/Opus
// audio from the Speaker (the endpoint's /audio/speech), with the whole
// formatted reply as its caption when that fits a caption (1024 characters
// after entity parsing), so no text message repeats it. A longer reply
// goes out as the voice note without caption, then the usual text
// messages. The speech input is the answer's visible text (Markdown
// rendered away), bounded by speakable. When speaking or sending fails the
// reply goes out as text, followed by a one-line notice saying the voice
// note failed and why.

// Speaker turns an answer into a voice note: OGG/Opus audio (the only
// format Telegram shows as a voice message). odek-bot's is
// internal/llm/speech's. Errors are shown to the user (one line), so they
// must not carry secrets.
type Speaker interface {
	Speak(ctx context.Context, text string) ([]byte, error)
}

// Voice modes of /voice.
const (
	voiceOff    = "off"
	voiceOn     = "on"
	voiceMirror = "mirror"
)

// parseVoiceMode reads a /voice argument or Config.Voice ("" = off).
func parseVoiceMode(s string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", voiceOff, "aus":
		return voiceOff, true
	case voiceOn, "an", "ein":
		return voiceOn, true
	case voiceMirror, "spiegeln":
		return voiceMirror, true
	}
	return "", false
}

// MaxCaptionLen is the Bot API's caption limit, in characters after entity
// parsing (sendVoice, sendPhoto, sendDocument).
const MaxCaptionLen = 1024

// MaxSpeechInput is the longest text sent to be spoken: OpenAI's
// documented limit for /audio/speech's input, 4096 characters.
const MaxSpeechInput = 4096

// speakable bounds the text of a voice note: text (already plain) whole
// when it has at most MaxSpeechInput characters; otherwise its first part,
// cut at the last sentence end (". ", "! ", "? ", a line break) within the
// limit when that keeps at least half of it, else at the last space, else
// at the limit, followed by " …". cut reports the cut. The voice note then
// speaks only the beginning; the full answer is always in text, since an
// answer this long never fits a caption. Pure.
func speakable(text string) (out string, cut bool) {
	text = strings.TrimSpace(text)
	r := []rune(text)
	if len(r) <= MaxSpeechInput {
		return text, false
	}
	limit := MaxSpeechInput - 2 // room for " …"
	w := r[:limit]
	at := -1
	for i := len(w) - 1; i >= limit/2; i-- {
		if w[i] == '\n' || (i+1 < len(r) && (w[i] == '.' || w[i] == '!' || w[i] == '?') && unicode.IsSpace(r[i+1])) {
			at = i + 1
			break
		}
	}
	if at < 0 {
		for i := len(w) - 1; i >= limit/2; i-- {
			if unicode.IsSpace(w[i]) {
				at = i
				break
			}
		}
	}
	if at < 0 {
		at = limit
	}
	return strings.TrimSpace(string(w[:at])) + " …", true
}

// voiceMode is the chat's /voice choice, else the operator's.
func (c *chat) voiceMode() string {
	if c.voice != "" {
		return c.voice
	}
	m, _ := parseVoiceMode(c.b.cfg.Voice) // validated by New
	return m
}

// wantsVoice reports whether the answer to js is spoken.
func (c *chat) wantsVoice(js *jobState) bool {
	if c.b.cfg.Speaker == nil || js == nil {
		return false
	}
	switch c.voiceMode() {
	case voiceOn:
		return true
	case voiceMirror:
		return js.byVoice
	}
	return false
}

// voiceCommand is /voice [on|off|mirror]: without a word it shows the
// chat's mode, with one it sets it.
func (c *chat) voiceCommand(ctx context.Context, lang, arg string) {
	if c.b.cfg.Speaker == nil {
		c.reply(ctx, tr(lang, "vo.none"))
		return
	}
	if strings.TrimSpace(arg) == "" {
		c.reply(ctx, tr(lang, "vo.show", tr(lang, "vo."+c.voiceMode())))
		return
	}
	m, ok := parseVoiceMode(arg)
	if !ok {
		c.reply(ctx, tr(lang, "vo.bad", oneLine(arg, 20)))
		return
	}
	c.voice = m
	if def, _ := parseVoiceMode(c.b.cfg.Voice); m == def {
		c.voice = "" // the operator's default: nothing to keep
	}
	c.reply(ctx, tr(lang, "vo.set", tr(lang, "vo."+m)))
}

// spokenReply is what speakReply did.
type spokenReply struct {
	rest   []tgformat.Chunk // the text messages still to send
	msgID  int              // the voice note (0 = none sent)
	notice string           // shown after the text when the voice failed
}

// speakReply sends the answer as a voice note when the chat wants it (see
// the top of this file). chunks is the formatted reply; answer the
// model's answer. It runs in the chat's actor.
func (c *chat) speakReply(ctx context.Context, js *jobState, lang, answer string, chunks []tgformat.Chunk, replyTo int) spokenReply {
	out := spokenReply{rest: chunks}
	if !c.wantsVoice(js) || strings.TrimSpace(answer) == "" || len(chunks) == 0 {
		return out
	}
	b := c.b
	var plain []string
	for _, ch := range tgformat.Answer(answer, tgformat.MaxMessageLen) {
		plain = append(plain, ch.Plain)
	}
	input, _ := speakable(strings.Join(plain, "\n"))
	if input == "" {
		return out
	}
	log := b.log.WithField("chat_id", c.id)
	b.tg.Call(ctx, tgbotapi.NewChatAction(c.id, tgbotapi.ChatRecordVoice), false)
	audio, err := b.cfg.Speaker.Speak(ctx, input)
	if err != nil {
		if ctx.Err() == nil {
			log.WithError(err).Warn("bot: speaking the answer failed; sending it as text")
			out.notice = tr(lang, "vo.failed", oneLine(err.Error(), 200))
		}
		return out
	}
	v := tgbotapi.NewVoice(c.id, tgbotapi.FileBytes{Name: "answer.ogg", Bytes: audio})
	v.ReplyToMessageID = replyTo
	captioned := len(chunks) == 1 && tgformat.TextLen(chunks[0].Plain) <= MaxCaptionLen
	if captioned {
		v.Caption, v.ParseMode = chunks[0].HTML, tgformat.Mode
	}
	m, kind, err := b.tg.Send(ctx, v)
	if kind != tgOK {
		if kind != tgCanceled {
			log.WithError(err).Warn("bot: sending the voice note failed; sending the answer as text")
			out.notice = tr(lang, "vo.sendfail")
		}
		return out
	}
	out.msgID = m.MessageID
	if captioned {
		out.rest = nil
	}
	return out
}
