// Package bottest is a fake Telegram Bot API server for tests: a real HTTP
// server on loopback (httptest) that speaks the Bot API's wire format for
// the methods odek-bot uses — getMe, getUpdates (long polling with offset,
// limit and timeout), sendMessage, editMessageText, deleteMessage,
// sendChatAction, answerCallbackQuery, sendDocument, setMyCommands,
// setWebhook and deleteWebhook — with the Bot API's error replies
// ({"ok":false,"error_code":…,"description":…,"parameters":{"retry_after":…}}),
// a 409 Conflict for a second concurrent long poll or a poll while a webhook
// is set, MarkdownV2 validation (CheckMarkdownV2) and message length limits.
//
// Tests inject updates (UserMessage, EditedMessage, Forwarded, PressButton),
// inject failures (FailNext, BlockChat) and assert on the recorded calls
// (Calls, WaitCalls) and on the chat's visible state (Messages).
//
// Concurrency and ownership: a Server is safe for concurrent use; it is
// closed by t.Cleanup. Returned slices are copies.
package bottest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// Token is the bot token the fake accepts; any other gets 401.
const Token = "123456:TEST-token-for-bottest"

// BotID is the id getMe reports (the number before ':' in Token).
const BotID = 123456

// BotUsername is the username getMe reports.
const BotUsername = "odek_test_bot"

// Call is one recorded Bot API request.
type Call struct {
	Method string
	// Params are the request's fields (form, multipart or JSON values as
	// strings).
	Params url.Values
	// FileName and File are the uploaded file of a sendDocument,
	// sendPhoto or sendVoice.
	FileName string
	File     []byte
	// Status is the HTTP status the fake answered with; ErrorCode and
	// Description its error, if any.
	Status      int
	Description string
	At          time.Time
}

// Failure is an error reply injected with FailNext.
type Failure struct {
	// Code is the error_code and, unless HTTPStatus is set, the status.
	Code        int
	Description string
	// RetryAfter, in seconds, becomes parameters.retry_after.
	RetryAfter int
	// HTTPStatus overrides the HTTP status; with RawBody the reply is not
	// JSON at all (a proxy's 502 page).
	HTTPStatus int
	RawBody    string
	// ParseMode, when set, limits the failure to calls with that
	// parse_mode ("MarkdownV2"); others pass untouched.
	ParseMode string
}

// Common failures, worded as the Bot API words them.
var (
	TooManyRequests = Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1}
	BadGateway      = Failure{HTTPStatus: 502, RawBody: "<html><body>502 Bad Gateway</body></html>"}
	InternalError   = Failure{Code: 500, Description: "Internal Server Error"}
	Blocked         = Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"}
	ChatNotFound    = Failure{Code: 400, Description: "Bad Request: chat not found"}
)

// Message is a message the bot sent, as the chat sees it now.
type Message struct {
	ID        int
	ChatID    int64
	Text      string
	ParseMode string
	// Shown is the text as the user sees it: Text with the HTML tags and
	// entities parsed (parse_mode HTML), else Text.
	Shown string
	// ReplyTo is the message this one replies to (reply_to_message_id or
	// reply_parameters), 0 for none.
	ReplyTo int
	// Keyboard is the inline keyboard's callback data, row by row.
	Keyboard [][]string
	Deleted  bool
	Edits    int
	// Thread is the forum topic it was sent to (message_thread_id; 0 =
	// General or not a forum).
	Thread int
	// Voice and Caption are a sendVoice's audio and caption as shown
	// (voice.go).
	Voice   []byte
	Caption string
}

type failRule struct {
	method string
	n      int
	f      Failure
}

// Server is the fake Bot API.
type Server struct {
	srv *httptest.Server
	t   testing.TB

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	nextID    int
	updates   []json.RawMessage // pending, in update id order
	updateIDs []int
	pollGen   int
	webhook   string
	calls     []Call
	fails     []failRule
	blocked   map[int64]bool
	messages  map[int64]map[int]*Message
	forums    map[int64]map[int]string // forum chats' topics: thread id -> name (topics.go)
	msgSeq    int
	callbacks map[string]bool
	commands  string
	files     map[string]storedFile // by file_id
	admins    map[int64]map[int64]bool
	fileSeq   int
	draft     *drafts // sendMessageDraft (draft.go)
	// users are the user messages offered in updates, reactions the
	// reactions the bot set (reaction.go).
	users     map[int64]map[int]message
	reactions map[int64][]Reaction
}

type storedFile struct {
	path    string
	data    []byte
	unsized bool // file_size left out (File.Unsized)
}

// New starts a fake Bot API server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, changed: make(chan struct{}), nextID: 1000, blocked: map[int64]bool{},
		messages: map[int64]map[int]*Message{}, callbacks: map[string]bool{}, files: map[string]storedFile{},
		draft: &drafts{byChat: map[int64][]Draft{}}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL, for Config.APIEndpoint
// (TELEGRAM_API_ENDPOINT).
func (s *Server) URL() string { return s.srv.URL }

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// ---- injecting updates ----

// User is a Telegram user of the fake.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
	// LanguageCode is the user's IETF language tag ("de"), as Telegram
	// sends it for users.
	LanguageCode string `json:"language_code,omitempty"`
}

type chat struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	IsForum bool   `json:"is_forum,omitempty"`
}

type message struct {
	MessageID         int          `json:"message_id"`
	From              *User        `json:"from,omitempty"`
	Date              int64        `json:"date"`
	Chat              chat         `json:"chat"`
	ForwardFrom       *User        `json:"forward_from,omitempty"`
	ForwardSenderName string       `json:"forward_sender_name,omitempty"`
	ForwardDate       int64        `json:"forward_date,omitempty"`
	EditDate          int64        `json:"edit_date,omitempty"`
	Text              string       `json:"text,omitempty"`
	Entities          []msgEntity  `json:"entities,omitempty"`
	ReplyMarkup       *replyMarkup `json:"reply_markup,omitempty"`
	ReplyToMessage    *message     `json:"reply_to_message,omitempty"`
	Quote             *textQuote   `json:"quote,omitempty"`
	MediaGroupID      string       `json:"media_group_id,omitempty"`
	ThreadID          int          `json:"message_thread_id,omitempty"`
	IsTopic           bool         `json:"is_topic_message,omitempty"`
	TopicCreated      *struct {
		Name      string `json:"name"`
		IconColor int    `json:"icon_color"`
	} `json:"forum_topic_created,omitempty"`
	Caption         string      `json:"caption,omitempty"`
	CaptionEntities []msgEntity `json:"caption_entities,omitempty"`
	Document        *fileRef    `json:"document,omitempty"`
	Photo           []fileRef   `json:"photo,omitempty"`
	Voice           *fileRef    `json:"voice,omitempty"`
	Audio           *fileRef    `json:"audio,omitempty"`
	Sticker         *fileRef    `json:"sticker,omitempty"`
	Location        *struct {
		Latitude  float64 `json:"latitude"`
		Longitude float64 `json:"longitude"`
	} `json:"location,omitempty"`
	Poll *struct {
		ID       string `json:"id"`
		Question string `json:"question"`
	} `json:"poll,omitempty"`
}

// fileRef is the wire form of Document, PhotoSize, Voice, Audio and
// Sticker: the fields odek reads (https://core.telegram.org/bots/api#document).
type fileRef struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
	Width        int    `json:"width,omitempty"`
	Height       int    `json:"height,omitempty"`
	Duration     int    `json:"duration,omitempty"`
	Emoji        string `json:"emoji,omitempty"`
	Type         string `json:"type,omitempty"`
}

type msgEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

type replyMarkup struct {
	InlineKeyboard [][]button `json:"inline_keyboard"`
}

type button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
}

func chatType(id int64) string {
	if id < 0 {
		return "supergroup"
	}
	return "private"
}

// addUpdate queues an update built by fill (which receives the update id)
// and returns the id.
func (s *Server) addUpdate(fill func(id int) map[string]any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := s.nextID
	u := fill(id)
	u["update_id"] = id
	s.rememberLocked(u) // reaction.go
	b, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	s.updates = append(s.updates, b)
	s.updateIDs = append(s.updateIDs, id)
	s.notifyLocked()
	return id
}

func (s *Server) userMessage(chatID, userID int64, text string) message {
	s.msgSeq++
	m := message{MessageID: s.msgSeq, From: &User{ID: userID, FirstName: fmt.Sprintf("user%d", userID)},
		Date: time.Now().Unix(), Chat: chat{ID: chatID, Type: chatType(chatID), IsForum: s.isForumLocked(chatID)}, Text: text}
	if strings.HasPrefix(text, "/") {
		end := strings.IndexAny(text, " \n")
		if end < 0 {
			end = len(text)
		}
		m.Entities = []msgEntity{{Type: "bot_command", Offset: 0, Length: len(utf16.Encode([]rune(text[:end])))}}
	}
	m.Entities = append(m.Entities, mentions(text)...)
	return m
}

// UserMessage queues a text message from userID in chatID (a private chat
// when chatID > 0, a supergroup when negative); text starting with "/" is
// marked as a bot command as Telegram does. It returns the update id.
func (s *Server) UserMessage(chatID, userID int64, text string) int {
	return s.addUpdate(func(int) map[string]any {
		return map[string]any{"message": s.userMessage(chatID, userID, text)}
	})
}

// EditedMessage queues an edited_message update.
func (s *Server) EditedMessage(chatID, userID int64, text string) int {
	return s.addUpdate(func(int) map[string]any {
		m := s.userMessage(chatID, userID, text)
		m.EditDate = time.Now().Unix()
		return map[string]any{"edited_message": m}
	})
}

// Forwarded queues a message userID forwarded from someone else.
func (s *Server) Forwarded(chatID, userID int64, text string) int {
	return s.addUpdate(func(int) map[string]any {
		m := s.userMessage(chatID, userID, text)
		m.ForwardFrom = &User{ID: 999, FirstName: "stranger"}
		m.ForwardDate = time.Now().Unix()
		return map[string]any{"message": m}
	})
}

// PressButton queues a callback_query: userID pressed the inline button
// with data under message messageID of chatID. It returns the update id;
// the callback query id is "cq<update id>".
func (s *Server) PressButton(chatID, userID int64, messageID int, data string) int {
	return s.addUpdate(func(id int) map[string]any {
		qid := fmt.Sprintf("cq%d", id)
		s.callbacks[qid] = true
		return map[string]any{"callback_query": map[string]any{
			"id": qid, "from": User{ID: userID, FirstName: fmt.Sprintf("user%d", userID)},
			"message":       message{MessageID: messageID, Chat: chat{ID: chatID, Type: chatType(chatID)}, Date: time.Now().Unix()},
			"chat_instance": "ci", "data": data,
		}}
	})
}

// ---- injecting failures ----

// FailNext makes the next n calls of method ("" = any method except
// getUpdates) fail with f.
func (s *Server) FailNext(method string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, failRule{method: method, n: n, f: f})
}

// BlockChat makes every call addressed to chatID fail as if the user had
// blocked the bot.
func (s *Server) BlockChat(chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[chatID] = true
}

// ---- inspecting ----

// Calls returns the recorded calls of the given methods (all when none).
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callsLocked(methods)
}

func (s *Server) callsLocked(methods []string) []Call {
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// WaitCalls polls the recorded calls until cond accepts them, failing the
// test after timeout, and returns them. It wakes on every call, no sleeps.
func (s *Server) WaitCalls(t testing.TB, timeout time.Duration, cond func([]Call) bool, methods ...string) []Call {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		calls := s.callsLocked(methods)
		ch := s.changed
		s.mu.Unlock()
		if cond(calls) {
			return calls
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("bottest: condition not met within %v; calls of %v so far:\n%s", timeout, methods, describe(calls))
			return nil
		}
	}
}

// Wait polls the fake's state until cond returns true, failing the test
// after timeout.
func (s *Server) Wait(t testing.TB, timeout time.Duration, what string, cond func(*Server) bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("bottest: %s: not within %v; calls:\n%s", what, timeout, describe(s.Calls()))
			return
		}
	}
}

func describe(calls []Call) string {
	var b strings.Builder
	for _, c := range calls {
		if c.Method == "getUpdates" {
			continue
		}
		text := c.Params.Get("text")
		if len(text) > 120 {
			text = text[:120] + "…"
		}
		fmt.Fprintf(&b, "  %s chat=%s msg=%s status=%d %q %s\n", c.Method, c.Params.Get("chat_id"), c.Params.Get("message_id"), c.Status, text, c.Description)
	}
	return b.String()
}

// Messages returns the chat's messages the bot sent, in id order,
// deleted ones included (Deleted set).
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages[chatID] {
		c := *m
		c.Keyboard = append([][]string(nil), m.Keyboard...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Visible returns the texts of the chat's messages that are not deleted,
// in order.
func (s *Server) Visible(chatID int64) []string {
	var out []string
	for _, m := range s.Messages(chatID) {
		if !m.Deleted {
			out = append(out, m.Shown)
		}
	}
	return out
}

// Commands returns the commands JSON of the last setMyCommands.
func (s *Server) Commands() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands
}

// PendingUpdates is the number of updates not yet confirmed by an offset.
func (s *Server) PendingUpdates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// ---- serving ----

type apiError struct {
	status      int
	code        int
	description string
	retryAfter  int
	raw         string
}

func errReply(code int, description string) *apiError {
	return &apiError{status: code, code: code, description: description}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if p, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+Token+"/"); ok {
		s.serveFile(w, p)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	tok, method, ok2 := strings.Cut(rest, "/")
	call := Call{At: time.Now(), Method: method}
	if !ok || !ok2 || tok != Token {
		writeErr(w, errReply(401, "Unauthorized"))
		return
	}
	params, fileName, file, err := readParams(r)
	call.Params, call.FileName, call.File = params, fileName, file
	var result any
	var aerr *apiError
	if err != nil {
		aerr = errReply(400, "Bad Request: "+err.Error())
	} else if f := s.takeFailure(method, params); f != nil {
		aerr = f
	} else {
		s.mu.Lock()
		thread, terr := s.checkThreadLocked(method, params)
		s.mu.Unlock()
		if aerr = terr; aerr == nil {
			result, aerr = s.dispatch(r, method, params, fileName, file)
		}
		if m, ok := result.(message); ok && aerr == nil && thread != 0 {
			s.mu.Lock()
			if sm := s.messages[m.Chat.ID][m.MessageID]; sm != nil {
				sm.Thread = thread
			}
			s.mu.Unlock()
			m.ThreadID, m.IsTopic = thread, true
			result = m
		}
	}
	s.mu.Lock()
	if aerr != nil {
		call.Status, call.Description = aerr.status, aerr.description
	} else {
		call.Status = 200
	}
	s.calls = append(s.calls, call)
	s.notifyLocked()
	s.mu.Unlock()
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "result": result})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func writeErr(w http.ResponseWriter, e *apiError) {
	if e.raw != "" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(e.status)
		io.WriteString(w, e.raw)
		return
	}
	body := map[string]any{"ok": false, "error_code": e.code, "description": e.description}
	if e.retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": e.retryAfter}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(b)
}

// readParams reads form, multipart or JSON parameters.
func readParams(r *http.Request) (url.Values, string, []byte, error) {
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "multipart/form-data"):
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			return nil, "", nil, err
		}
		vals := url.Values(r.MultipartForm.Value)
		for k, v := range r.URL.Query() {
			vals[k] = append(vals[k], v...)
		}
		for _, fhs := range r.MultipartForm.File {
			if len(fhs) == 0 {
				continue
			}
			f, err := fhs[0].Open()
			if err != nil {
				return nil, "", nil, err
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return nil, "", nil, err
			}
			return vals, fhs[0].Filename, b, nil
		}
		return vals, "", nil, nil
	case strings.HasPrefix(ct, "application/json"):
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, "", nil, err
		}
		vals := r.URL.Query()
		for k, v := range m {
			if s, ok := v.(string); ok {
				vals.Set(k, s)
			} else {
				b, _ := json.Marshal(v)
				vals.Set(k, string(b))
			}
		}
		return vals, "", nil, nil
	default:
		if err := r.ParseForm(); err != nil {
			return nil, "", nil, err
		}
		return r.Form, "", nil, nil
	}
}

// takeFailure returns an injected failure for this call, if any.
func (s *Server) takeFailure(method string, params url.Values) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if chatID, err := strconv.ParseInt(params.Get("chat_id"), 10, 64); err == nil && s.blocked[chatID] && method != "getUpdates" {
		return errReply(403, Blocked.Description)
	}
	for i := range s.fails {
		r := &s.fails[i]
		if r.n <= 0 || (r.method != method && !(r.method == "" && method != "getUpdates")) {
			continue
		}
		if r.f.ParseMode != "" && params.Get("parse_mode") != r.f.ParseMode {
			continue
		}
		r.n--
		f := r.f
		status := f.HTTPStatus
		if status == 0 {
			status = f.Code
		}
		return &apiError{status: status, code: f.Code, description: f.Description, retryAfter: f.RetryAfter, raw: f.RawBody}
	}
	return nil
}

func (s *Server) dispatch(r *http.Request, method string, p url.Values, fileName string, file []byte) (any, *apiError) {
	switch method {
	case "getMe":
		return User{ID: BotID, IsBot: true, FirstName: "odek test", Username: BotUsername}, nil
	case "getUpdates":
		return s.getUpdates(r, p)
	case "getFile":
		return s.getFile(p)
	case "getChatMember":
		return s.getChatMember(p)
	case "sendMessage":
		return s.sendMessage(p)
	case "sendMessageDraft":
		return s.sendMessageDraft(p)
	case "setMessageReaction":
		return s.setMessageReaction(p)
	case "editMessageText":
		return s.editMessageText(p)
	case "deleteMessage":
		return s.deleteMessage(p)
	case "sendChatAction":
		if p.Get("action") == "" {
			return nil, errReply(400, "Bad Request: wrong parameter action in request")
		}
		if _, aerr := chatIDParam(p); aerr != nil {
			return nil, aerr
		}
		return true, nil
	case "answerCallbackQuery":
		s.mu.Lock()
		defer s.mu.Unlock()
		id := p.Get("callback_query_id")
		if !s.callbacks[id] {
			return nil, errReply(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
		}
		delete(s.callbacks, id)
		return true, nil
	case "sendDocument":
		chatID, aerr := chatIDParam(p)
		if aerr != nil {
			return nil, aerr
		}
		if file == nil {
			return nil, errReply(400, "Bad Request: there is no document in the request")
		}
		if len(file) > 50<<20 {
			return nil, errReply(413, "Request Entity Too Large")
		}
		if textLen(p.Get("caption")) > 1024 {
			return nil, errReply(400, "Bad Request: message caption is too long")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		m := s.storeLocked(chatID, "[document "+fileName+"] "+p.Get("caption"), "", nil)
		return s.wireLocked(m), nil
	case "sendPhoto":
		// https://core.telegram.org/bots/api#sendphoto: "The photo must be
		// at most 10 MB in size"; the caption at most 1024 characters.
		chatID, aerr := chatIDParam(p)
		if aerr != nil {
			return nil, aerr
		}
		if file == nil {
			return nil, errReply(400, "Bad Request: there is no photo in the request")
		}
		if len(file) > 10<<20 {
			return nil, errReply(400, "Bad Request: PHOTO_INVALID_DIMENSIONS")
		}
		if textLen(p.Get("caption")) > 1024 {
			return nil, errReply(400, "Bad Request: message caption is too long")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		m := s.storeLocked(chatID, "[photo "+fileName+"] "+p.Get("caption"), "", nil)
		return s.wireLocked(m), nil
	case "sendVoice":
		return s.sendVoice(r, p, fileName, file)
	case "setMyCommands":
		var cmds []struct{ Command, Description string }
		if err := json.Unmarshal([]byte(p.Get("commands")), &cmds); err != nil {
			return nil, errReply(400, "Bad Request: can't parse commands JSON object")
		}
		for _, c := range cmds {
			if c.Command == "" || len(c.Command) > 32 || strings.ToLower(c.Command) != c.Command || c.Description == "" || len(c.Description) > 256 {
				return nil, errReply(400, "Bad Request: BOT_COMMAND_INVALID")
			}
		}
		s.mu.Lock()
		s.commands = p.Get("commands")
		s.mu.Unlock()
		return true, nil
	case "setWebhook":
		s.mu.Lock()
		s.webhook = p.Get("url")
		s.pollGen++
		s.notifyLocked()
		s.mu.Unlock()
		return true, nil
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook = ""
		s.mu.Unlock()
		return true, nil
	}
	return nil, errReply(404, "Not Found")
}

func chatIDParam(p url.Values) (int64, *apiError) {
	id, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || id == 0 {
		return 0, errReply(400, "Bad Request: chat not found")
	}
	return id, nil
}

// getUpdates confirms updates below offset, then returns pending ones or
// waits up to timeout seconds for one. A newer getUpdates ends a waiting
// one with 409, as Telegram does.
func (s *Server) getUpdates(r *http.Request, p url.Values) (any, *apiError) {
	offset, _ := strconv.Atoi(p.Get("offset"))
	limit, _ := strconv.Atoi(p.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p.Get("timeout"))
	s.mu.Lock()
	if s.webhook != "" {
		s.mu.Unlock()
		return nil, errReply(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first")
	}
	// The offset confirms earlier updates once, when the call arrives.
	if offset > 0 {
		k := 0
		for k < len(s.updateIDs) && s.updateIDs[k] < offset {
			k++
		}
		s.updates, s.updateIDs = s.updates[k:], s.updateIDs[k:]
	}
	s.pollGen++
	gen := s.pollGen
	s.notifyLocked()
	s.mu.Unlock()
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.pollGen != gen {
			s.mu.Unlock()
			return nil, errReply(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
		}
		if n := min(len(s.updates), limit); n > 0 {
			out := append([]json.RawMessage(nil), s.updates[:n]...)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return []json.RawMessage{}, nil
		case <-r.Context().Done():
			return []json.RawMessage{}, nil
		}
	}
}

// textLen is the length Telegram counts: UTF-16 code units.
func textLen(s string) int { return len(utf16.Encode([]rune(s))) }

func parseKeyboard(p url.Values) ([][]string, *apiError) {
	raw := p.Get("reply_markup")
	if raw == "" {
		return nil, nil
	}
	var m replyMarkup
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, errReply(400, "Bad Request: can't parse reply keyboard markup JSON object")
	}
	var rows [][]string
	for _, row := range m.InlineKeyboard {
		var r []string
		for _, b := range row {
			if len(b.CallbackData) > 64 {
				return nil, errReply(400, "Bad Request: BUTTON_DATA_INVALID")
			}
			r = append(r, b.CallbackData)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func checkText(p url.Values) *apiError {
	text := p.Get("text")
	if strings.TrimSpace(text) == "" {
		return errReply(400, "Bad Request: message text is empty")
	}
	switch p.Get("parse_mode") {
	case "":
		if textLen(text) > 4096 {
			return errReply(400, "Bad Request: message is too long")
		}
	case "HTML":
		// The limit applies to the text after entity parsing.
		shown, err := ParseHTML(text)
		if err != nil {
			return errReply(400, "Bad Request: "+err.Error())
		}
		if strings.TrimSpace(shown) == "" {
			return errReply(400, "Bad Request: message text is empty")
		}
		if textLen(shown) > 4096 {
			return errReply(400, "Bad Request: message is too long")
		}
	case "MarkdownV2":
		if textLen(text) > 4096 {
			return errReply(400, "Bad Request: message is too long")
		}
		if err := CheckMarkdownV2(text); err != nil {
			return errReply(400, "Bad Request: "+err.Error())
		}
	default:
		return errReply(400, "Bad Request: unsupported parse_mode "+p.Get("parse_mode"))
	}
	return nil
}

// textParams checks what sendMessage and editMessageText share: the chat
// id, the text with its parse mode, and an optional inline keyboard.
func textParams(p url.Values) (int64, [][]string, *apiError) {
	chatID, aerr := chatIDParam(p)
	if aerr != nil {
		return 0, nil, aerr
	}
	if aerr := checkText(p); aerr != nil {
		return 0, nil, aerr
	}
	kb, aerr := parseKeyboard(p)
	if aerr != nil {
		return 0, nil, aerr
	}
	return chatID, kb, nil
}

func (s *Server) sendMessage(p url.Values) (any, *apiError) {
	chatID, kb, aerr := textParams(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.storeLocked(chatID, p.Get("text"), p.Get("parse_mode"), kb)
	m.ReplyTo = replyToParam(p)
	return s.wireLocked(m), nil
}

func (s *Server) storeLocked(chatID int64, text, mode string, kb [][]string) *Message {
	s.msgSeq++
	m := &Message{ID: s.msgSeq, ChatID: chatID, Text: text, ParseMode: mode, Shown: shownText(text, mode), Keyboard: kb}
	if s.messages[chatID] == nil {
		s.messages[chatID] = map[int]*Message{}
	}
	s.messages[chatID][m.ID] = m
	return m
}

func (s *Server) wireLocked(m *Message) message {
	return message{MessageID: m.ID, Date: time.Now().Unix(), Chat: chat{ID: m.ChatID, Type: chatType(m.ChatID), IsForum: s.isForumLocked(m.ChatID)}, Text: m.Text,
		From: &User{ID: BotID, IsBot: true, FirstName: "odek test", Username: BotUsername}}
}

func (s *Server) editMessageText(p url.Values) (any, *apiError) {
	chatID, kb, aerr := textParams(p)
	if aerr != nil {
		return nil, aerr
	}
	id, _ := strconv.Atoi(p.Get("message_id"))
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[chatID][id]
	if m == nil || m.Deleted {
		return nil, errReply(400, "Bad Request: message to edit not found")
	}
	if m.Text == p.Get("text") && fmt.Sprint(m.Keyboard) == fmt.Sprint(kb) {
		return nil, errReply(400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.Text, m.ParseMode, m.Keyboard = p.Get("text"), p.Get("parse_mode"), kb
	m.Shown = shownText(m.Text, m.ParseMode)
	m.Edits++
	return s.wireLocked(m), nil
}

func (s *Server) deleteMessage(p url.Values) (any, *apiError) {
	chatID, aerr := chatIDParam(p)
	if aerr != nil {
		return nil, aerr
	}
	id, _ := strconv.Atoi(p.Get("message_id"))
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[chatID][id]
	if m == nil || m.Deleted {
		return nil, errReply(400, "Bad Request: message to delete not found")
	}
	m.Deleted = true
	return true, nil
}

// shownText is what a chat shows of an accepted text.
func shownText(text, mode string) string {
	if mode == "HTML" {
		if shown, err := ParseHTML(text); err == nil {
			return shown
		}
	}
	return text
}

// replyToParam reads reply_to_message_id, or reply_parameters'
// message_id (Bot API 7.0).
func replyToParam(p url.Values) int {
	if id, err := strconv.Atoi(p.Get("reply_to_message_id")); err == nil {
		return id
	}
	var rp struct {
		MessageID int `json:"message_id"`
	}
	if json.Unmarshal([]byte(p.Get("reply_parameters")), &rp) == nil {
		return rp.MessageID
	}
	return 0
}
