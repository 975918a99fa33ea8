package bottest

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Reaction is one setMessageReaction call the fake accepted: the bot's
// reaction on a message as the chat shows it now ("" = removed).
type Reaction struct {
	ChatID    int64
	MessageID int
	Emoji     string
	Big       bool
}

// ReactionEmoji are the emoji a ReactionTypeEmoji may carry, as the Bot API
// lists them (https://core.telegram.org/bots/api#reactiontypeemoji:
// "Reaction emoji. Currently, it can be one of …"); any other is refused
// with REACTION_INVALID.
var ReactionEmoji = []string{"👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏",
	"👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", "❤\u200d🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾", "💋",
	"🖕", "😈", "😴", "😭", "🤓", "👻", "👨\u200d💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄", "☃", "💅",
	"🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾", "🤷\u200d♂", "🤷", "🤷\u200d♀", "😡"}

// Reactions returns the reactions the bot set in chat, in order.
func (s *Server) Reactions(chatID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions[chatID]...)
}

// rememberLocked keeps the user message of an update (message or
// edited_message), so that a later reply to it carries it as
// reply_to_message and a reaction may be set on it. s.mu is held.
func (s *Server) rememberLocked(u map[string]any) {
	for _, k := range []string{"message", "edited_message"} {
		m, ok := u[k].(message)
		if !ok {
			continue
		}
		if s.users == nil {
			s.users = map[int64]map[int]message{}
		}
		if s.users[m.Chat.ID] == nil {
			s.users[m.Chat.ID] = map[int]message{}
		}
		s.users[m.Chat.ID][m.MessageID] = m
	}
}

// textQuote is the Bot API's TextQuote
// (https://core.telegram.org/bots/api#textquote): the quoted part of the
// replied message, its position in UTF-16 code units, and is_manual when
// the user picked it (rather than the client quoting the whole message).
type textQuote struct {
	Text     string `json:"text"`
	Position int    `json:"position"`
	IsManual bool   `json:"is_manual,omitempty"`
}

// quoteLocked is the quote field of a reply quoting part of to. A quote
// that is not in the replied message's text (or caption) is a broken
// test: Telegram only sends quotes of the message's own text. s.mu is
// held.
func (s *Server) quoteLocked(to *message, quote string) *textQuote {
	if to == nil {
		s.t.Fatalf("bottest: Incoming.Quote %q without ReplyTo", quote)
		return nil
	}
	text := to.Text
	if text == "" {
		text = to.Caption
	}
	i := strings.Index(text, quote)
	if i < 0 {
		s.t.Fatalf("bottest: Incoming.Quote %q is not part of message %d's text %q", quote, to.MessageID, text)
		return nil
	}
	return &textQuote{Text: quote, Position: len(utf16.Encode([]rune(text[:i]))), IsManual: true}
}

// setMessageReaction emulates https://core.telegram.org/bots/api#setmessagereaction:
// chat_id and message_id (required) name the message; reaction is a
// JSON-serialized list of ReactionType, of which a bot may set at most
// one ("Bots can't use paid reactions"; "Currently, as non-premium users,
// bots can set up to one reaction per message"); an empty list or none
// removes the bot's reaction; is_big is an optional Boolean. A
// ReactionTypeEmoji must name one of ReactionEmoji (else
// "Bad Request: REACTION_INVALID", as Telegram answers). The message must
// be one the fake knows in that chat; the wording of that refusal and of
// the parameter errors is the fake's own.
func (s *Server) setMessageReaction(p url.Values) (any, *apiError) {
	chatID, aerr := chatIDParam(p)
	if aerr != nil {
		return nil, aerr
	}
	msgID, err := strconv.Atoi(p.Get("message_id"))
	if err != nil || msgID <= 0 {
		return nil, errReply(400, "Bad Request: message_id must be a positive integer")
	}
	for k := range p {
		switch k {
		case "chat_id", "message_id", "reaction", "is_big":
		default:
			if !strings.HasPrefix(k, "_") {
				return nil, errReply(400, "Bad Request: unexpected parameter "+k)
			}
		}
	}
	big := false
	if v := p.Get("is_big"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errReply(400, "Bad Request: is_big must be a Boolean")
		}
		big = b
	}
	var rs []struct {
		Type          string `json:"type"`
		Emoji         string `json:"emoji"`
		CustomEmojiID string `json:"custom_emoji_id"`
	}
	if raw := p.Get("reaction"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &rs); err != nil {
			return nil, errReply(400, "Bad Request: can't parse reaction types JSON object")
		}
	}
	if len(rs) > 1 {
		return nil, errReply(400, "Bad Request: REACTIONS_TOO_MANY")
	}
	emoji := ""
	if len(rs) == 1 {
		switch rs[0].Type {
		case "emoji":
			ok := false
			for _, e := range ReactionEmoji {
				ok = ok || e == rs[0].Emoji
			}
			if !ok {
				return nil, errReply(400, "Bad Request: REACTION_INVALID")
			}
			emoji = rs[0].Emoji
		case "custom_emoji":
			return nil, errReply(400, "Bad Request: REACTION_INVALID") // the fake knows no custom emoji
		default:
			return nil, errReply(400, "Bad Request: unsupported reaction type "+strconv.Quote(rs[0].Type))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[chatID][msgID]; !ok {
		if m := s.messages[chatID][msgID]; m == nil || m.Deleted {
			return nil, errReply(400, "Bad Request: message to react not found")
		}
	}
	if s.reactions == nil {
		s.reactions = map[int64][]Reaction{}
	}
	s.reactions[chatID] = append(s.reactions[chatID], Reaction{ChatID: chatID, MessageID: msgID, Emoji: emoji, Big: big})
	s.notifyLocked()
	return true, nil
}
