package bottest

import (
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Draft is one sendMessageDraft call the fake accepted: the text the
// user's client showed as the bot's message being written.
type Draft struct {
	ChatID  int64
	DraftID int64
	Text    string
	Shown   string
}

// drafts holds the accepted drafts and whether the method exists.
type drafts struct {
	mu     sync.Mutex
	off    bool // an older Bot API: the method is unknown
	byChat map[int64][]Draft
}

func (s *Server) drafts() *drafts { return s.draft }

// NoDrafts makes the fake an older Bot API without sendMessageDraft: the
// call is answered as Telegram answers an unknown method (404 "Not Found:
// method not found").
func (s *Server) NoDrafts() {
	d := s.drafts()
	d.mu.Lock()
	d.off = true
	d.mu.Unlock()
}

// Drafts returns the drafts accepted in chat, in order.
func (s *Server) Drafts(chatID int64) []Draft {
	d := s.drafts()
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Draft(nil), d.byChat[chatID]...)
}

// sendMessageDraft emulates https://core.telegram.org/bots/api#sendmessagedraft
// ("Use this method to stream a partial message to a user while the
// message is being generated"): chat_id is the target private chat;
// draft_id a unique, non-zero integer (changes of one draft id are
// animated); text 1-4096 characters after entities parsing, with an
// optional parse_mode or entities; message_thread_id optional. It returns
// True. The draft is an ephemeral preview: it persists nothing, so it is
// not among Messages; the final text must still be sent with sendMessage.
// The descriptions of refusals other than the shared text checks are the
// fake's own wording.
func (s *Server) sendMessageDraft(p url.Values) (any, *apiError) {
	d := s.drafts()
	d.mu.Lock()
	off := d.off
	d.mu.Unlock()
	if off {
		return nil, errReply(404, "Not Found: method not found")
	}
	chatID, aerr := chatIDParam(p)
	if aerr != nil {
		return nil, aerr
	}
	if chatID <= 0 {
		return nil, errReply(400, "Bad Request: drafts can be sent only to private chats")
	}
	raw := p.Get("draft_id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if raw == "" || err != nil || id == 0 {
		return nil, errReply(400, "Bad Request: draft_id must be a non-zero integer")
	}
	if v := p.Get("message_thread_id"); v != "" {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return nil, errReply(400, "Bad Request: invalid message_thread_id")
		}
	}
	if aerr := checkText(p); aerr != nil {
		return nil, aerr
	}
	for k := range p {
		switch k {
		case "chat_id", "draft_id", "text", "parse_mode", "entities", "message_thread_id":
		default:
			if !strings.HasPrefix(k, "_") {
				return nil, errReply(400, "Bad Request: unexpected parameter "+k)
			}
		}
	}
	text := p.Get("text")
	d.mu.Lock()
	d.byChat[chatID] = append(d.byChat[chatID], Draft{ChatID: chatID, DraftID: id, Text: text, Shown: shownText(text, p.Get("parse_mode"))})
	d.mu.Unlock()
	return true, nil
}
