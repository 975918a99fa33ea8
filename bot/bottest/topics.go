package bottest

import (
	"net/url"
	"strconv"
)

// Forum topics (issue 26). What the fake does, after the Bot API
// documentation (https://core.telegram.org/bots/api):
//
//   - Chat.is_forum is true for a supergroup with topics enabled.
//   - A message sent in a topic carries message_thread_id (the topic) and
//     is_topic_message true; a message in the General topic carries neither.
//   - send* methods and sendChatAction take message_thread_id, "for forum
//     supergroups only" ("for supergroups only" for sendChatAction). A
//     thread id the chat does not have — any id in a chat that is not a
//     forum, a closed or unknown topic — is refused with "Bad Request:
//     message thread not found", as Telegram answers it.
//   - The General topic has no thread id of its own for sending: messages
//     to it are sent without message_thread_id. A thread id of 1 (how some
//     clients name the General topic) is refused like an unknown one, which
//     is what Telegram answers according to the reports in the client
//     libraries' trackers; a bot that sends to General must leave the
//     parameter out.
//   - Creating a topic produces a service message (forum_topic_created) in
//     the topic; its message id is the topic's message_thread_id.
//   - editMessageText, deleteMessage and answerCallbackQuery take no thread
//     id: they address a message.

// threadMethods are the methods that take message_thread_id.
var threadMethods = map[string]bool{
	"sendMessage": true, "sendMessageDraft": true, "sendChatAction": true, "sendDocument": true,
	"sendPhoto": true, "sendVoice": true, "sendAudio": true, "sendMediaGroup": true, "copyMessage": true,
	"forwardMessage": true, "sendSticker": true, "sendVideo": true, "sendAnimation": true,
}

// Forum makes chatID (a supergroup, negative) a forum: its messages say
// is_forum, and sends may name its topics.
func (s *Server) Forum(chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forums == nil {
		s.forums = map[int64]map[int]string{}
	}
	if s.forums[chatID] == nil {
		s.forums[chatID] = map[int]string{}
	}
}

// NewTopic creates a topic named name in the forum chatID (made a forum
// if it is not yet) and queues its forum_topic_created service message
// from userID. It returns the topic's message_thread_id.
func (s *Server) NewTopic(chatID, userID int64, name string) int {
	s.Forum(chatID)
	var thread int
	s.addUpdate(func(int) map[string]any {
		if s.msgSeq < 1 {
			s.msgSeq = 1 // thread 1 is the General topic's; topics get later ids
		}
		m := s.userMessage(chatID, userID, "")
		thread = m.MessageID
		s.forums[chatID][thread] = name
		m.Chat.IsForum = true
		m.ThreadID, m.IsTopic = thread, true
		m.TopicCreated = &struct {
			Name      string `json:"name"`
			IconColor int    `json:"icon_color"`
		}{name, 7322096}
		return map[string]any{"message": m}
	})
	return thread
}

// TopicMessage queues a text message from userID in the topic thread of
// the forum chatID (thread 0: the General topic). It returns the update
// id and the message id.
func (s *Server) TopicMessage(chatID, userID int64, thread int, text string) (updateID, messageID int) {
	updateID = s.addUpdate(func(int) map[string]any {
		m := s.userMessage(chatID, userID, text)
		m.Chat.IsForum = true
		if thread != 0 {
			m.ThreadID, m.IsTopic = thread, true
		}
		messageID = m.MessageID
		return map[string]any{"message": m}
	})
	return updateID, messageID
}

// checkThreadLocked refuses a message_thread_id the chat does not have,
// as Telegram does, and returns the thread a send goes to (0 = General or
// not a forum).
func (s *Server) checkThreadLocked(method string, p url.Values) (int, *apiError) {
	v := p.Get("message_thread_id")
	if v == "" {
		return 0, nil
	}
	if !threadMethods[method] {
		return 0, nil // other methods ignore unknown parameters
	}
	id, err := strconv.Atoi(v)
	chatID, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errReply(400, "Bad Request: message thread not found")
	}
	if _, ok := s.forums[chatID][id]; !ok {
		return 0, errReply(400, "Bad Request: message thread not found")
	}
	return id, nil
}

// isForumLocked reports whether chatID is a forum.
func (s *Server) isForumLocked(chatID int64) bool { return s.forums[chatID] != nil }

// Threads returns, for each message the bot sent to chatID that is not
// deleted, the topic it went to (0 = General or none), in id order.
func (s *Server) Threads(chatID int64) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, m := range s.messages[chatID] {
		if !m.Deleted {
			out[m.Shown] = m.Thread
		}
	}
	return out
}
