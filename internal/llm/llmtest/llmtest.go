// Package llmtest is a faithful fake of an OpenAI-compatible
// chat-completions server for tests: an httptest.Server on loopback that
// answers POST /v1/chat/completions from a script of Turns (or a function
// deciding each turn from the request), streamed as server-sent events or
// as one JSON body, exactly in the wire shape OpenAI uses, and can inject
// the failures a real provider produces (error statuses, Retry-After,
// malformed JSON, cut or stalled streams, slow headers, errors inside the
// stream).
//
// It validates requests the way OpenAI does (unknown top-level parameters,
// missing model or messages, stream_options without stream, tool messages
// that answer no call, tool calls left unanswered, malformed tool
// declarations) and answers 400 like the real service, so a client bug
// fails the test instead of passing against a lenient fake.
//
// Handler is the plain http.Handler (for a benchmark program serving it
// from main); Server wraps it in an httptest.Server tied to a testing.TB.
// Both are safe for concurrent requests; requests are answered in arrival
// order of their script turns. Server's resources are released by
// t.Cleanup.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/internal/llm"
)

// DefaultChunkSize is the number of bytes of content, reasoning or
// arguments per chunk when Turn.ChunkSize is 0.
const DefaultChunkSize = 8

// MaxRequestBytes bounds a request body; larger ones get 413.
const MaxRequestBytes = 64 << 20

// Call is a tool call the fake model makes.
type Call struct {
	ID        string // "" ⇒ generated "call_<n>", unique per handler
	Name      string
	Arguments string // raw JSON text, sent as is (split across chunks)
}

// Turn is one scripted reply.
type Turn struct {
	// Content is the answer text.
	Content string
	// Reasoning is sent before the content as reasoning_content deltas
	// (DeepSeek style), or as message.reasoning_content when not streaming.
	Reasoning string
	// ToolCalls are the calls the model makes (finish_reason tool_calls).
	ToolCalls []Call
	// Usage is reported as is; nil ⇒ estimated from sizes (4 bytes a token).
	Usage *llm.Usage
	// FinishReason overrides the computed one ("tool_calls" with calls,
	// else "stop"); e.g. "length".
	FinishReason string
	// ChunkSize is the number of bytes per content/reasoning/arguments
	// delta, cut at rune boundaries; 0 ⇒ DefaultChunkSize. Arguments of two
	// bytes or more are always split over at least two chunks.
	ChunkSize int
	// Stream overrides the reply mode; nil ⇒ whatever the request asked.
	Stream *bool
	// Status, when not 0 or 200, makes the reply an error response with
	// that status and body {"error":{"message","type","code"}}. With Status
	// 0 and ErrorMessage set, the error is sent inside a 200 reply: as an
	// error event after the first chunk when streaming, as a 200 body with
	// "error" otherwise.
	Status int
	// ErrorType, ErrorCode, ErrorMessage fill the error object; an empty
	// message defaults to the status text, an empty code is sent as null.
	ErrorType, ErrorCode, ErrorMessage string
	// RetryAfter is sent as the Retry-After header of an error response.
	RetryAfter string
	// Malformed sends invalid JSON: as one chunk (after the role chunk)
	// when streaming, as the body otherwise.
	Malformed bool
	// CutAfterChunks > 0 aborts the connection after that many SSE events.
	CutAfterChunks int
	// StallAfterChunks > 0 stops sending after that many SSE events and
	// keeps the connection open until the client goes away or the handler
	// is closed.
	StallAfterChunks int
	// Delay waits before sending the response headers.
	Delay time.Duration
	// Burst sends a streamed reply's events together, flushed once at the
	// end, as a server does whose whole answer is ready at once (or that
	// buffers): the client sees every event in one read. It keeps
	// throughput benchmarks from measuring the fake's per-event writes.
	// Ignored with CutAfterChunks and StallAfterChunks.
	Burst bool
	// Raw, when set, is the reply body sent verbatim with status 200: a
	// stream or JSON body recorded from (or documented by) a real
	// provider. RawContentType is its Content-Type ("" sends none, so the
	// client has to sniff). Everything else of the turn but Delay and
	// Check is ignored.
	Raw            []byte
	RawContentType string
	// Check, when set, inspects the request before anything is sent; a
	// non-empty result is answered 400 invalid_request_error with that
	// message, the way a provider rejects a conversation that lost what
	// it required (DeepSeek: "The reasoning_content in the thinking mode
	// must be passed back to the API.").
	Check func(Recorded) string
	// CheckStatus is the status of a rejection by Check; 0 means 400
	// (Mistral, for one, answers 422).
	CheckStatus int
}

// Reply returns a Turn answering with content.
func Reply(content string) Turn { return Turn{Content: content} }

// CallTools returns a Turn making the given tool calls.
func CallTools(calls ...Call) Turn { return Turn{ToolCalls: calls} }

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Recorded is one chat-completions request as the server received it.
type Recorded struct {
	Model         string
	Messages      []llm.Message
	Tools         []llm.ToolSpec
	ToolChoice    json.RawMessage // nil when absent
	Stream        bool
	StreamOptions *StreamOptions
	Temperature   *float64
	MaxTokens     int
	// ResponseFormat is the request's response_format (nil when absent).
	ResponseFormat json.RawMessage
	Header         http.Header
	Body           []byte // the raw request body
}

// LastMessage returns the last message of the request (zero if none).
func (r Recorded) LastMessage() llm.Message {
	if len(r.Messages) == 0 {
		return llm.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Handler serves the fake API. Create it with NewScriptHandler, or use a
// Server.
type Handler struct {
	next   func(Recorded) (Turn, error)
	errorf func(format string, args ...any) // reports script problems; may be nil
	record bool

	mu      sync.Mutex
	apiKey  string
	reqs    []Recorded
	calls   int
	callSeq int // generated tool-call ids
	respSeq int // completion ids

	closeOnce sync.Once
	done      chan struct{}
}

// NewScriptHandler returns a Handler that decides each reply with fn.
// It keeps no record of requests (Requests returns nil), so a long-running
// benchmark server does not grow; Calls still counts them.
func NewScriptHandler(fn func(Recorded) Turn) *Handler {
	return newHandler(func(r Recorded) (Turn, error) { return fn(r), nil }, nil, false)
}

func newHandler(next func(Recorded) (Turn, error), errorf func(string, ...any), record bool) *Handler {
	return &Handler{next: next, errorf: errorf, record: record, done: make(chan struct{})}
}

// RequireAPIKey makes the handler answer 401 to requests whose
// Authorization header is not "Bearer <key>". It returns h.
func (h *Handler) RequireAPIKey(key string) *Handler {
	h.mu.Lock()
	h.apiKey = key
	h.mu.Unlock()
	return h
}

// Requests returns copies of the recorded chat-completions requests that
// passed authentication, in arrival order.
func (h *Handler) Requests() []Recorded {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Recorded(nil), h.reqs...)
}

// Calls returns the number of chat-completions requests received
// (authenticated or not, valid or not).
func (h *Handler) Calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// Close releases replies that are stalled or delayed. It is idempotent.
func (h *Handler) Close() { h.closeOnce.Do(func() { close(h.done) }) }

// Server is a Handler served on loopback by an httptest.Server.
type Server struct {
	// URL is the base URL to configure a client with, ending in "/v1".
	URL string

	h   *Handler
	srv *httptest.Server
}

// New starts a server answering with script, one turn per request in
// order. A request beyond the script gets 500 and fails the test.
func New(t testing.TB, script ...Turn) *Server {
	t.Helper()
	var mu sync.Mutex
	i := 0
	next := func(Recorded) (Turn, error) {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(script) {
			i++
			return Turn{}, fmt.Errorf("llmtest: script exhausted: request %d but only %d turn(s) scripted", i, len(script))
		}
		i++
		return script[i-1], nil
	}
	return start(t, next)
}

// NewHandler starts a server that decides each reply with fn, called with
// the request (e.g. to answer the last user or tool message).
func NewHandler(t testing.TB, fn func(req Recorded) Turn) *Server {
	t.Helper()
	return start(t, func(r Recorded) (Turn, error) { return fn(r), nil })
}

func start(t testing.TB, next func(Recorded) (Turn, error)) *Server {
	h := newHandler(next, t.Errorf, true)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return &Server{URL: srv.URL + "/v1", h: h, srv: srv}
}

// RequireAPIKey makes the server answer 401 unless "Authorization: Bearer
// <key>" is sent. It returns s.
func (s *Server) RequireAPIKey(key string) *Server {
	s.h.RequireAPIKey(key)
	return s
}

// Requests returns the recorded chat-completions requests.
func (s *Server) Requests() []Recorded { return s.h.Requests() }

// Calls returns the number of chat-completions requests received.
func (s *Server) Calls() int { return s.h.Calls() }

// Handler returns the server's handler.
func (s *Server) Handler() *Handler { return s.h }

// ServeHTTP answers GET …/models and POST …/chat/completions; anything else
// gets 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimRight(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		h.chat(w, r)
	case strings.HasSuffix(path, "/models"):
		if !h.authorized(w, r) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"object": "list",
			"data":   []map[string]any{{"id": "llmtest-model", "object": "model", "created": 1700000000, "owned_by": "llmtest"}},
		})
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}
}

func (h *Handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	key := h.apiKey
	h.mu.Unlock()
	if key == "" {
		return true
	}
	got := r.Header.Get("Authorization")
	if got == "" {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "",
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return false
	}
	if got != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return false
	}
	return true
}

// allowedParams are the top-level request fields OpenAI accepts.
var allowedParams = map[string]bool{
	"model": true, "messages": true, "tools": true, "tool_choice": true, "stream": true,
	"stream_options": true, "temperature": true, "max_tokens": true, "max_completion_tokens": true,
	"top_p": true, "n": true, "stop": true, "seed": true, "parallel_tool_calls": true, "user": true,
	"response_format": true, "presence_penalty": true, "frequency_penalty": true, "logprobs": true,
	"top_logprobs": true, "logit_bias": true, "reasoning_effort": true, "metadata": true, "store": true,
	"service_tier": true, "modalities": true, "prediction": true,
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []llm.ToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type wireRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []llm.ToolSpec  `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Stream        bool            `json:"stream"`
	StreamOptions *StreamOptions  `json:"stream_options"`
	Temperature   *float64        `json:"temperature"`
	MaxTokens     int             `json:"max_tokens"`
	// ResponseFormat is checked by checkResponseFormat.
	ResponseFormat json.RawMessage `json:"response_format"`
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	if !h.authorized(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "",
			fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		return // the client went away
	}
	if len(body) > MaxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "Request body too large.")
		return
	}
	rec, msg := parseRequest(body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", msg)
		return
	}
	rec.Header = r.Header.Clone()
	if h.record {
		h.mu.Lock()
		h.reqs = append(h.reqs, rec)
		h.mu.Unlock()
	}
	turn, err := h.next(rec)
	if err != nil {
		if h.errorf != nil {
			h.errorf("%v", err)
		}
		writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
		return
	}
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-h.done:
			t.Stop()
			return
		}
	}
	if turn.Check != nil {
		if msg := turn.Check(rec); msg != "" {
			status := turn.CheckStatus
			if status == 0 {
				status = http.StatusBadRequest
			}
			writeError(w, status, "invalid_request_error", "invalid_request_error", msg)
			return
		}
	}
	if turn.Raw != nil {
		if turn.RawContentType != "" {
			w.Header().Set("Content-Type", turn.RawContentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing by net/http either
		}
		w.WriteHeader(http.StatusOK)
		w.Write(turn.Raw)
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		msg := turn.ErrorMessage
		if msg == "" {
			msg = http.StatusText(turn.Status)
		}
		writeError(w, turn.Status, turn.ErrorType, turn.ErrorCode, msg)
		return
	}
	stream := rec.Stream
	if turn.Stream != nil {
		stream = *turn.Stream
	}
	rep := h.prepare(&rec, &turn, len(body))
	if stream {
		h.writeStream(w, r, &rec, &turn, rep)
	} else {
		h.writeBody(w, &turn, rep)
	}
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// parseRequest decodes and validates a request like OpenAI does; msg is
// the 400 message for an invalid one.
func parseRequest(body []byte) (rec Recorded, msg string) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return rec, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
	}
	for k := range top {
		if !allowedParams[k] {
			return rec, "Unrecognized request argument supplied: " + k
		}
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return rec, "Invalid request: " + err.Error()
	}
	// The provider fields of each message (llm.Message keeps unknown
	// members in Extra).
	var extras []llm.Message
	var withExtra struct {
		Messages []llm.Message `json:"messages"`
	}
	if err := json.Unmarshal(body, &withExtra); err != nil {
		return rec, "Invalid request: " + err.Error()
	}
	extras = withExtra.Messages
	rec = Recorded{
		Model: wr.Model, Tools: wr.Tools, ToolChoice: wr.ToolChoice, Stream: wr.Stream,
		StreamOptions: wr.StreamOptions, Temperature: wr.Temperature, MaxTokens: wr.MaxTokens, Body: body,
		ResponseFormat: wr.ResponseFormat,
	}
	if msg := checkResponseFormat(wr.ResponseFormat); msg != "" {
		return rec, msg
	}
	switch {
	case wr.Model == "":
		return rec, "you must provide a model parameter"
	case len(wr.Messages) == 0:
		return rec, "[] is too short - 'messages'"
	case wr.StreamOptions != nil && !wr.Stream:
		return rec, "The 'stream_options' parameter is only allowed when 'stream' is enabled."
	case len(wr.ToolChoice) > 0 && len(wr.Tools) == 0:
		return rec, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
	}
	for i, t := range wr.Tools {
		if t.Type != "function" {
			return rec, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'. (tools[%d].type)", t.Type, i)
		}
		if !toolName.MatchString(t.Function.Name) {
			return rec, fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && p[0] != '{' {
			return rec, fmt.Sprintf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", t.Function.Name)
		}
	}
	pending := map[string]bool{} // tool_call ids awaiting a tool message
	var order []string
	for i, m := range wr.Messages {
		content, ok := contentString(m.Content)
		if !ok {
			return rec, fmt.Sprintf("Invalid type for 'messages[%d].content'.", i)
		}
		if m.Role != "tool" && len(pending) > 0 {
			var missing []string
			for _, id := range order {
				if pending[id] {
					missing = append(missing, id)
				}
			}
			return rec, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(missing, ", ")
		}
		switch m.Role {
		case "system", "developer", "user":
		case "assistant":
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" {
					return rec, fmt.Sprintf("Invalid 'messages[%d].tool_calls[%d]': id, type 'function' and function.name are required.", i, j)
				}
				pending[tc.ID] = true
				order = append(order, tc.ID)
			}
		case "tool":
			if !pending[m.ToolCallID] {
				return rec, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
			}
			delete(pending, m.ToolCallID)
			if len(pending) == 0 {
				order = order[:0]
			}
		default:
			return rec, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'. (messages[%d].role)", m.Role, i)
		}
		rec.Messages = append(rec.Messages, llm.Message{
			Role: m.Role, Content: content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name,
			Extra: extras[i].Extra,
		})
	}
	if len(pending) > 0 {
		return rec, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(order, ", ")
	}
	return rec, ""
}

// contentString renders request content: string, null, or text parts.
func contentString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// reply is a turn made concrete: ids assigned, usage and finish reason
// decided.
type reply struct {
	id     string
	model  string
	calls  []Call
	usage  llm.Usage
	finish string
}

func (h *Handler) prepare(rec *Recorded, t *Turn, bodyLen int) *reply {
	h.mu.Lock()
	h.respSeq++
	rp := &reply{id: "chatcmpl-llmtest" + strconv.Itoa(h.respSeq), model: rec.Model}
	rp.calls = make([]Call, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			h.callSeq++
			c.ID = "call_" + strconv.Itoa(h.callSeq)
		}
		rp.calls[i] = c
	}
	h.mu.Unlock()
	switch {
	case t.FinishReason != "":
		rp.finish = t.FinishReason
	case len(rp.calls) > 0:
		rp.finish = "tool_calls"
	default:
		rp.finish = "stop"
	}
	if t.Usage != nil {
		rp.usage = *t.Usage
	} else {
		out := len(t.Content) + len(t.Reasoning)
		for _, c := range rp.calls {
			out += len(c.Name) + len(c.Arguments)
		}
		rp.usage = llm.Usage{PromptTokens: max(1, bodyLen/4), CompletionTokens: max(1, out/4)}
	}
	return rp
}

func usageJSON(u llm.Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.PromptTokens,
		"completion_tokens":         u.CompletionTokens,
		"total_tokens":              u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details":     map[string]int{"cached_tokens": u.CachedTokens, "audio_tokens": 0},
		"completion_tokens_details": map[string]int{"reasoning_tokens": 0, "audio_tokens": 0},
	}
}

// Wire shapes of a streamed chunk.
type chunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Refusal          json.RawMessage `json:"refusal,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int     `json:"index"`
	ID       string  `json:"id,omitempty"`
	Type     string  `json:"type,omitempty"`
	Function fnDelta `json:"function"`
}

type fnDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

const created = 1700000000

// sseWriter writes events and applies the turn's cut and stall.
type sseWriter struct {
	w     http.ResponseWriter
	f     http.Flusher
	r     *http.Request
	h     *Handler
	t     *Turn
	sent  int
	ended bool // stalled: stop writing
}

// event writes one "data:" event; it returns false once the turn stalls.
func (s *sseWriter) event(data []byte) bool {
	if s.ended {
		return false
	}
	if s.t.CutAfterChunks > 0 && s.sent >= s.t.CutAfterChunks {
		panic(http.ErrAbortHandler) // closes the connection without ending the body
	}
	if s.t.StallAfterChunks > 0 && s.sent >= s.t.StallAfterChunks {
		s.ended = true
		select {
		case <-s.r.Context().Done():
		case <-s.h.done:
		}
		return false
	}
	var b bytes.Buffer
	b.Grow(len(data) + 8)
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		s.ended = true
		return false
	}
	if s.f != nil {
		s.f.Flush()
	}
	s.sent++
	return true
}

func (s *sseWriter) chunk(c *chunk) bool {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // cannot happen: all fields are marshalable
	}
	return s.event(b)
}

func (h *Handler) writeStream(w http.ResponseWriter, r *http.Request, rec *Recorded, t *Turn, rp *reply) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Request-Id", rp.id)
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	if t.Burst && t.CutAfterChunks == 0 && t.StallAfterChunks == 0 {
		// One write at the end: the handler's return flushes the buffer.
		f = nil
	}
	if f != nil {
		f.Flush()
	}
	s := &sseWriter{w: w, f: f, r: r, h: h, t: t}
	includeUsage := rec.StreamOptions != nil && rec.StreamOptions.IncludeUsage
	mk := func(d chunkDelta, finish *string) *chunk {
		c := &chunk{ID: rp.id, Object: "chat.completion.chunk", Created: created, Model: rp.model,
			SystemFingerprint: "fp_llmtest", Choices: []chunkChoice{{Delta: d, FinishReason: finish}}}
		if includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return c
	}
	empty := ""
	if !s.chunk(mk(chunkDelta{Role: "assistant", Content: &empty, Refusal: json.RawMessage("null")}, nil)) {
		return
	}
	if t.Malformed {
		if !s.event([]byte(`{"id":"` + rp.id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"trunc`)) {
			return
		}
	}
	if t.Status == 0 && t.ErrorMessage != "" {
		e := errorObject(t.ErrorType, t.ErrorCode, t.ErrorMessage)
		b, _ := json.Marshal(e)
		s.event(b)
		return // providers close the stream after an error event
	}
	size := t.ChunkSize
	if size <= 0 {
		size = DefaultChunkSize
	}
	for _, p := range splitRunes(t.Reasoning, size) {
		if !s.chunk(mk(chunkDelta{ReasoningContent: &p}, nil)) {
			return
		}
	}
	for _, p := range splitRunes(t.Content, size) {
		if !s.chunk(mk(chunkDelta{Content: &p}, nil)) {
			return
		}
	}
	for i, c := range rp.calls {
		first := toolCallDelta{Index: i, ID: c.ID, Type: "function", Function: fnDelta{Name: c.Name}}
		if !s.chunk(mk(chunkDelta{ToolCalls: []toolCallDelta{first}}, nil)) {
			return
		}
		argSize := size
		if n := len(c.Arguments); n >= 2 && argSize > (n+1)/2 {
			argSize = (n + 1) / 2
		}
		for _, p := range splitRunes(c.Arguments, argSize) {
			if !s.chunk(mk(chunkDelta{ToolCalls: []toolCallDelta{{Index: i, Function: fnDelta{Arguments: p}}}}, nil)) {
				return
			}
		}
	}
	finish := rp.finish
	if !s.chunk(mk(chunkDelta{}, &finish)) {
		return
	}
	if includeUsage {
		u, _ := json.Marshal(usageJSON(rp.usage))
		c := &chunk{ID: rp.id, Object: "chat.completion.chunk", Created: created, Model: rp.model,
			SystemFingerprint: "fp_llmtest", Choices: []chunkChoice{}, Usage: u}
		if !s.chunk(c) {
			return
		}
	}
	s.event([]byte("[DONE]"))
}

func (h *Handler) writeBody(w http.ResponseWriter, t *Turn, rp *reply) {
	if t.Malformed {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"id":"`+rp.id+`","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`)
		return
	}
	if t.Status == 0 && t.ErrorMessage != "" {
		writeJSON(w, http.StatusOK, errorObject(t.ErrorType, t.ErrorCode, t.ErrorMessage))
		return
	}
	msg := map[string]any{"role": "assistant", "content": t.Content, "refusal": nil}
	if t.Content == "" && len(rp.calls) > 0 {
		msg["content"] = nil
	}
	if t.Reasoning != "" {
		msg["reasoning_content"] = t.Reasoning
	}
	if len(rp.calls) > 0 {
		calls := make([]map[string]any, len(rp.calls))
		for i, c := range rp.calls {
			calls[i] = map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": rp.id, "object": "chat.completion", "created": created, "model": rp.model,
		"system_fingerprint": "fp_llmtest",
		"choices": []map[string]any{{
			"index": 0, "message": msg, "logprobs": nil, "finish_reason": rp.finish,
		}},
		"usage": usageJSON(rp.usage),
	})
}

// splitRunes cuts s into pieces of about size bytes without splitting a
// UTF-8 sequence (a piece may be longer than size when a rune is).
func splitRunes(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func errorObject(typ, code, msg string) map[string]any {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	return map[string]any{"error": e}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, errorObject(typ, code, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // cannot happen: maps of plain values
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// checkResponseFormat rejects a response_format the way OpenAI's chat
// completions endpoint does (API reference, "response_format": type text,
// json_object or json_schema; json_schema needs a name of at most 64 of
// a-z, A-Z, 0-9, '_', '-' and a schema object; with strict true the root
// must be a closed object that requires every property — the structured
// outputs guide's "Supported schemas"). Only the root of a strict schema
// is checked here. The messages follow the endpoint's 400 texts as users
// have reported them. "" when the field is absent or acceptable.
func checkResponseFormat(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return "Invalid type for 'response_format': expected an object."
	}
	switch rf.Type {
	case "text", "json_object":
		return ""
	case "json_schema":
	default:
		return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", rf.Type)
	}
	js := rf.JSONSchema
	if js == nil {
		return "Missing required parameter: 'response_format.json_schema'."
	}
	if len(js.Name) > 64 || !toolName.MatchString(js.Name) {
		return "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
	}
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(js.Schema, &schema); err != nil || schema == nil {
		return "Invalid type for 'response_format.json_schema.schema': expected an object."
	}
	if js.Strict == nil || !*js.Strict {
		return ""
	}
	var typ string
	json.Unmarshal(schema["type"], &typ)
	if typ != "object" {
		return fmt.Sprintf("Invalid schema for response_format '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%s\"'.", js.Name, typ)
	}
	if string(schema["additionalProperties"]) != "false" {
		return fmt.Sprintf("Invalid schema for response_format '%s': In context=(), 'additionalProperties' is required to be supplied and to be false.", js.Name)
	}
	var props map[string]json.RawMessage
	var required []string
	json.Unmarshal(schema["properties"], &props)
	json.Unmarshal(schema["required"], &required)
	for k := range props {
		if !slices.Contains(required, k) {
			return fmt.Sprintf("Invalid schema for response_format '%s': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", js.Name, k)
		}
	}
	return ""
}
