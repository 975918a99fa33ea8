package bottest

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf16"
)

// MaxDownloadBytes is the Bot API's limit on files a bot may download
// with getFile: "For the moment, bots can download files of up to 20MB in
// size" (https://core.telegram.org/bots/api#getfile); bigger files get
// "Bad Request: file is too big".
const MaxDownloadBytes = 20 << 20

// File is an attachment of an Incoming message.
type File struct {
	Name string // file_name (documents, audio)
	MIME string // mime_type
	Data []byte
	// Size overrides file_size (to claim a size without the bytes); 0 =
	// len(Data).
	Size int64
	// Unsized leaves file_size out of the message and of getFile's File
	// while Data is served: the Bot API marks the field "Optional", so a
	// bot cannot count on knowing a file's size before it downloads it.
	Unsized bool
}

// Incoming is a user's message with what Telegram attaches to it.
type Incoming struct {
	Chat, User int64
	Text       string
	Caption    string
	// ReplyTo is the id of the message this one replies to (one the bot
	// sent, or another Incoming's MessageID).
	ReplyTo int
	// Quote is the part of the replied message the user quoted (the
	// message's quote field); it must occur in that message's text, as
	// Telegram requires.
	Quote string
	// From names the sender (first_name); "" = "user<id>".
	From string
	// MediaGroup groups the messages of an album.
	MediaGroup string
	Document   *File
	Photo      *File // sent as three sizes, the largest last
	Voice      *File
	Audio      *File
	Sticker    bool
	Location   bool
	Poll       bool
	// Lang is the sender's language_code.
	Lang string
}

// Send queues a message update built from in, marking "@username"
// mentions and a leading "/command" as entities the way Telegram does, and
// returns the update id and the message id.
func (s *Server) Send(in Incoming) (updateID, messageID int) {
	updateID = s.addUpdate(func(int) map[string]any {
		m := s.userMessage(in.Chat, in.User, in.Text)
		m.From.LanguageCode = in.Lang
		if in.From != "" {
			m.From.FirstName = in.From
		}
		m.Caption, m.CaptionEntities = in.Caption, mentions(in.Caption)
		m.MediaGroupID = in.MediaGroup
		if in.ReplyTo != 0 {
			m.ReplyToMessage = s.replyTargetLocked(in.Chat, in.ReplyTo)
		}
		if in.Quote != "" {
			m.Quote = s.quoteLocked(m.ReplyToMessage, in.Quote) // reaction.go
		}
		if in.Document != nil {
			m.Document = s.fileLocked(in.Document, "documents")
		}
		if in.Photo != nil {
			big := s.fileLocked(in.Photo, "photos")
			big.Width, big.Height, big.FileName, big.MimeType = 1280, 960, "", ""
			small := *big
			small.FileID, small.FileUniqueID, small.Width, small.Height = big.FileID+"s", big.FileUniqueID+"s", 90, 67
			m.Photo = []fileRef{small, *big}
		}
		if in.Voice != nil {
			m.Voice = s.fileLocked(in.Voice, "voice")
			m.Voice.Duration, m.Voice.FileName = 3, ""
			if m.Voice.MimeType == "" {
				m.Voice.MimeType = "audio/ogg" // Telegram's voice notes: OGG with Opus
			}
		}
		if in.Audio != nil {
			m.Audio = s.fileLocked(in.Audio, "music")
		}
		if in.Sticker {
			m.Sticker = &fileRef{FileID: "sticker1", FileUniqueID: "st1", Width: 512, Height: 512, Emoji: "👍", Type: "regular"}
		}
		if in.Location {
			m.Location = &struct {
				Latitude  float64 `json:"latitude"`
				Longitude float64 `json:"longitude"`
			}{52.52, 13.40}
		}
		if in.Poll {
			m.Poll = &struct {
				ID       string `json:"id"`
				Question string `json:"question"`
			}{"p1", "lunch?"}
		}
		messageID = m.MessageID
		return map[string]any{"message": m}
	})
	return updateID, messageID
}

// mentions marks "@word" runs as mention entities (UTF-16 offsets).
func mentions(text string) []msgEntity {
	var out []msgEntity
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && text[i-1] != ' ' && text[i-1] != '\n') {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == '_' || text[j] >= 'a' && text[j] <= 'z' || text[j] >= 'A' && text[j] <= 'Z' || text[j] >= '0' && text[j] <= '9') {
			j++
		}
		if j-i >= 6 {
			out = append(out, msgEntity{Type: "mention", Offset: len(utf16.Encode([]rune(text[:i]))), Length: len(utf16.Encode([]rune(text[i:j])))})
		}
		i = j
	}
	return out
}

// replyTargetLocked is the reply_to_message of a reply to id: the bot's
// message when it sent id, else a user message stub. s.mu is held.
func (s *Server) replyTargetLocked(chatID int64, id int) *message {
	if m, ok := s.users[chatID][id]; ok {
		// Telegram does not nest: the replied message comes without its
		// own reply_to_message and quote.
		m.ReplyToMessage, m.Quote = nil, nil
		return &m
	}
	if m := s.messages[chatID][id]; m != nil {
		w := s.wireLocked(m)
		return &w
	}
	return &message{MessageID: id, From: &User{ID: 1, FirstName: "someone"}, Date: time.Now().Unix(), Chat: chat{ID: chatID, Type: chatType(chatID)}, Text: "…"}
}

// fileLocked stores f for getFile and returns its wire form. s.mu is held.
func (s *Server) fileLocked(f *File, dir string) *fileRef {
	s.fileSeq++
	id := fmt.Sprintf("BQACAgIAAx%04d", s.fileSeq)
	size := f.Size
	if size == 0 {
		size = int64(len(f.Data))
	}
	name := f.Name
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i:]
	}
	if dir == "voice" && ext == "" {
		ext = ".oga" // Telegram stores voice notes as voice/file_<n>.oga
	}
	s.files[id] = storedFile{path: fmt.Sprintf("%s/file_%d%s", dir, s.fileSeq, ext), data: f.Data, unsized: f.Unsized}
	if f.Unsized {
		size = 0 // omitted from the wire form
	}
	if f.Size != 0 {
		sf := s.files[id]
		sf.data = nil // claimed size only
		s.files[id] = sf
	}
	return &fileRef{FileID: id, FileUniqueID: fmt.Sprintf("AgAD%04d", s.fileSeq), FileName: name, MimeType: f.MIME, FileSize: size}
}

// getFile answers https://core.telegram.org/bots/api#getfile: a File
// with file_path, or "file is too big" over 20 MB.
func (s *Server) getFile(p map[string][]string) (any, *apiError) {
	id := ""
	if v := p["file_id"]; len(v) > 0 {
		id = v[0]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return nil, errReply(400, "Bad Request: invalid file_id")
	}
	if f.data == nil {
		return nil, errReply(400, "Bad Request: file is too big")
	}
	if len(f.data) > MaxDownloadBytes {
		return nil, errReply(400, "Bad Request: file is too big")
	}
	out := map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(f.data), "file_path": f.path}
	if f.unsized {
		delete(out, "file_size")
	}
	return out, nil
}

// serveFile serves https://api.telegram.org/file/bot<token>/<file_path>.
func (s *Server) serveFile(w http.ResponseWriter, path string) {
	s.mu.Lock()
	var data []byte
	found := false
	for _, f := range s.files {
		if f.path == path && f.data != nil {
			data, found = f.data, true
		}
	}
	s.calls = append(s.calls, Call{At: time.Now(), Method: "file/" + path, Status: 200})
	s.notifyLocked()
	s.mu.Unlock()
	if !found {
		http.Error(w, `{"ok":false,"error_code":404,"description":"Not Found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

// EditMessage queues an edited_message update for the user's message
// messageID (as Telegram sends it: the same message_id, edit_date set,
// the new text).
func (s *Server) EditMessage(chatID, userID int64, messageID int, text string) int {
	return s.addUpdate(func(int) map[string]any {
		m := s.userMessage(chatID, userID, text)
		m.MessageID = messageID
		m.EditDate = time.Now().Unix()
		return map[string]any{"edited_message": m}
	})
}

// SetAdmin makes userID an administrator of chatID for getChatMember
// (everyone else is a "member").
func (s *Server) SetAdmin(chatID, userID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admins == nil {
		s.admins = map[int64]map[int64]bool{}
	}
	if s.admins[chatID] == nil {
		s.admins[chatID] = map[int64]bool{}
	}
	s.admins[chatID][userID] = true
}

// getChatMember answers https://core.telegram.org/bots/api#getchatmember
// with a ChatMember whose status is "administrator" or "member".
func (s *Server) getChatMember(p map[string][]string) (any, *apiError) {
	get := func(k string) string {
		if v := p[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var chatID, userID int64
	if _, err := fmt.Sscan(get("chat_id"), &chatID); err != nil {
		return nil, errReply(400, "Bad Request: chat not found")
	}
	if _, err := fmt.Sscan(get("user_id"), &userID); err != nil {
		return nil, errReply(400, "Bad Request: invalid user_id specified")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	status := "member"
	if s.admins[chatID][userID] {
		status = "administrator"
	}
	return map[string]any{"status": status, "user": User{ID: userID, FirstName: fmt.Sprintf("user%d", userID)}}, nil
}
