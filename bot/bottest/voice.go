package bottest

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
)

// sendVoice is the Bot API's sendVoice
// (https://core.telegram.org/bots/api#sendvoice), as strict as the bot
// needs it checked:
//
//   - the voice is uploaded as multipart/form-data in the part named
//     "voice" (the only way a bot sends a new file's bytes); a file_id or
//     URL string is refused here, since odek-bot never sends one;
//   - "audio must be in an .OGG file encoded with OPUS" to show as a
//     voice note (MP3 and M4A are accepted by Telegram but sent as audio
//     files): the fake requires the OGG signature "OggS";
//   - at most 50 MB ("Bots can currently send voice messages of up to 50
//     MB in size");
//   - caption "0-1024 characters after entities parsing", parse_mode HTML
//     or MarkdownV2 checked as for text; message_thread_id is checked by
//     the forum rules (topics.go);
//   - parameters outside the method's documented list are refused, so a
//     misspelt one does not pass unnoticed.
//
// The stored message's Text is "[voice <bytes>] " and the caption; Voice
// and Caption carry them apart.
func (s *Server) sendVoice(r *http.Request, p url.Values, fileName string, file []byte) (any, *apiError) {
	chatID, aerr := chatIDParam(p)
	if aerr != nil {
		return nil, aerr
	}
	for k := range p {
		if !sendVoiceParams[k] {
			return nil, errReply(400, "Bad Request: unknown parameter "+k)
		}
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") || r.MultipartForm == nil || len(r.MultipartForm.File["voice"]) != 1 {
		if p.Get("voice") != "" {
			return nil, errReply(400, "Bad Request: wrong remote file identifier specified: this fake takes uploads only")
		}
		return nil, errReply(400, "Bad Request: there is no voice in the request")
	}
	if len(file) > 50<<20 {
		return nil, errReply(413, "Request Entity Too Large")
	}
	if !bytes.HasPrefix(file, []byte("OggS")) {
		return nil, errReply(400, "Bad Request: VOICE_MESSAGES_FORBIDDEN or not an OGG/Opus file")
	}
	caption := p.Get("caption")
	shown := caption
	switch p.Get("parse_mode") {
	case "":
	case "HTML":
		var err error
		if shown, err = ParseHTML(caption); err != nil {
			return nil, errReply(400, "Bad Request: can't parse entities: "+err.Error())
		}
	case "MarkdownV2":
		if err := CheckMarkdownV2(caption); err != nil {
			return nil, errReply(400, "Bad Request: "+err.Error())
		}
	default:
		return nil, errReply(400, "Bad Request: unsupported parse_mode "+p.Get("parse_mode"))
	}
	if textLen(shown) > 1024 {
		return nil, errReply(400, "Bad Request: message caption is too long")
	}
	kb, aerr := parseKeyboard(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.storeLocked(chatID, "[voice] "+caption, p.Get("parse_mode"), kb)
	m.Shown = "[voice] " + shown
	m.Voice, m.Caption = append([]byte(nil), file...), shown
	m.ReplyTo = replyToParam(p)
	return s.wireLocked(m), nil
}

// sendVoiceParams are sendVoice's documented parameters (Bot API 9.x),
// plus reply_to_message_id and allow_sending_without_reply, which older
// clients still send and the Bot API still reads.
var sendVoiceParams = map[string]bool{
	"business_connection_id": true, "chat_id": true, "message_thread_id": true, "direct_messages_topic_id": true,
	"voice": true, "caption": true, "parse_mode": true, "caption_entities": true, "duration": true,
	"disable_notification": true, "protect_content": true, "allow_paid_broadcast": true, "message_effect_id": true,
	"suggested_post_parameters": true, "reply_parameters": true, "reply_markup": true,
	"reply_to_message_id": true, "allow_sending_without_reply": true,
}
