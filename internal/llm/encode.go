package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/odekrun/odek/internal/toolschema"
)

// wireRest is the request body without "messages", which encodeRequest
// writes itself, after it.
type wireRest struct {
	Model         string          `json:"model"`
	Tools         []ToolSpec      `json:"tools,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	MaxTokens     int             `json:"max_tokens,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	StreamOptions *wireStreamOpts `json:"stream_options,omitempty"`
	// ResponseFormat is sent for a Request with an OutputSchema to the
	// models of schemaOpts.responseFormat.
	ResponseFormat *wireResponseFormat `json:"response_format,omitempty"`
}

// wireResponseFormat is OpenAI's structured-output request field:
// {"type":"json_schema","json_schema":{"name":…,"schema":…,"strict":…}}.
type wireResponseFormat struct {
	Type       string         `json:"type"`
	JSONSchema wireJSONSchema `json:"json_schema"`
}

type wireJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// responseFormatName names the schema in response_format (OpenAI requires
// a name of a-z, A-Z, 0-9, '_' and '-').
const responseFormatName = "odek_output"

type wireStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

// encodeRequest validates req and renders the body once for all attempts
// of a call, as one slice appended to dst[:0] (which may be nil); see
// encodeBody, which Complete uses.
func encodeRequest(req *Request, stream bool, cache *msgCache, dst []byte, so schemaOpts) ([]byte, error) {
	segs, _, err := encodeBody(req, stream, cache, nil, so)
	if err != nil {
		return nil, err
	}
	out := dst[:0]
	for _, s := range segs {
		out = append(out, s...)
	}
	return out, nil
}

// encodeBody validates req and renders the body once for all attempts of
// a call, as segments to be sent in order: pieces of buf (what this call
// encoded, appended to dst[:0]) and the cached encodings of unchanged
// messages, shared and never copied: an agent resends its whole, mostly
// unchanged history on every call, and re-encoding or even copying it
// would cost CPU in proportion to the history on every iteration.
// "tools" is omitted when empty and tool_choice is never sent ("auto" is
// the default whenever tools are present). Empty ToolSpec.Type and
// ToolCall.Type are sent as "function" (req is not modified).
//
// Messages worth caching (cacheable) are looked up in cache (nil: no
// caching); the encodings of the others are cached for the next call.
func encodeBody(req *Request, stream bool, cache *msgCache, dst []byte, so schemaOpts) (segs [][]byte, buf []byte, err error) {
	switch {
	case strings.TrimSpace(req.Model) == "":
		return nil, nil, fmt.Errorf("%w: Request.Model is empty", ErrInvalidRequest)
	case len(req.Messages) == 0:
		return nil, nil, fmt.Errorf("%w: Request.Messages is empty", ErrInvalidRequest)
	case req.MaxTokens < 0:
		return nil, nil, fmt.Errorf("%w: Request.MaxTokens is %d, want >= 0", ErrInvalidRequest, req.MaxTokens)
	}
	restEnc := cache.lookupRest(req, stream)
	if restEnc == nil {
		if restEnc, err = encodeRest(req, stream, so); err != nil {
			return nil, nil, err
		}
		cache.storeRest(req, stream, restEnc)
	}

	// segs are built in order; a piece of buf is recorded in pieces and
	// filled in at the end (buf may still move while it grows). Cached
	// encodings start with the ',' that separates them from the message
	// before, so a run of unchanged messages is a run of segments.
	segs = make([][]byte, 0, len(req.Messages)+2)
	type piece struct{ seg, from, to int }
	var pieces []piece
	buf = dst[:0]
	cached := cache.lookup(req.Messages)
	// Everything but the messages (model, tools, stream options: the same
	// for every call of a run) goes first, so consecutive requests of a
	// conversation share the longest byte prefix: a provider's or a
	// gateway's prefix cache serves it (docs/SESSIONS.md).
	buf = append(buf, restEnc[:len(restEnc)-1]...)
	buf = append(buf, `,"messages":[`...)
	open := 0 // start of the buf piece not yet in segs
	flush := func() {
		if len(buf) > open {
			pieces = append(pieces, piece{len(segs), open, len(buf)})
			segs = append(segs, nil)
		}
		open = len(buf)
	}
	var misses []int
	bpSys, bpLast := -1, -1
	if slices.Contains(so.breakpoints, req.Model) {
		bpSys, bpLast = breakpointsAt(req.Messages)
	}
	for i := range req.Messages {
		if len(req.Messages[i].Images) > 0 { // sent with its images (images.go), never cached
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendImageMessage(buf, &req.Messages[i])
			continue
		}
		if i == bpSys || i == bpLast { // marked for this call only, never cached
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendBreakpoint(buf, &req.Messages[i], so.dropEcho); err != nil {
				return nil, nil, err
			}
			continue
		}
		if cached != nil && cached[i] != nil {
			flush()
			enc := cached[i]
			if i == 0 {
				enc = enc[1:]
			}
			segs = append(segs, enc)
			continue
		}
		start := len(buf)
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = appendMessageDrop(buf, &req.Messages[i], so.dropEcho); err != nil {
			return nil, nil, err
		}
		if cache != nil && cacheable(&req.Messages[i]) {
			misses = append(misses, i, start, len(buf))
		}
	}
	if len(misses) > 0 {
		// Copy the new encodings out of buf (which belongs to this call)
		// before caching them, each with its leading ','.
		entries := make([]msgEntry, 0, len(misses)/3)
		for k := 0; k < len(misses); k += 3 {
			i, from, to := misses[k], misses[k+1], misses[k+2]
			enc := make([]byte, 0, to-from+1)
			if i == 0 {
				enc = append(enc, ',')
			}
			entries = append(entries, msgEntry{msg: req.Messages[i], enc: append(enc, buf[from:to]...)})
		}
		cache.store(entries)
	}
	buf = append(buf, "]}"...)
	flush()
	for _, p := range pieces {
		segs[p.seg] = buf[p.from:p.to:p.to]
	}
	return segs, buf, nil
}

// breakpointsAt picks the messages that carry explicit prompt-cache
// breakpoints: the leading system prompt (sys) and the last stable
// message (last): the newest message with text that is not a trailing
// system message (the agent's plan, rebuilt for every request). -1 where
// there is none. A message's text is what is marked: a message without
// text (an assistant turn of calls only) cannot carry one.
func breakpointsAt(msgs []Message) (sys, last int) {
	sys, last = -1, -1
	if len(msgs) > 0 && msgs[0].Role == RoleSystem && msgs[0].Content != "" {
		sys = 0
	}
	end := len(msgs)
	for end > 1 && msgs[end-1].Role == RoleSystem {
		end--
	}
	for i := end - 1; i > sys; i-- {
		if msgs[i].Content != "" {
			last = i
			break
		}
	}
	return sys, last
}

// appendBreakpoint appends m with its text as one content part marked
// {"cache_control":{"type":"ephemeral"}} (Anthropic's prompt caching, as
// OpenRouter and LiteLLM pass it through); every other member as m's
// own encoding has it.
func appendBreakpoint(dst []byte, m *Message, drop []string) ([]byte, error) {
	plain, err := appendMessageDrop(nil, m, drop)
	if err != nil {
		return dst, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(plain, &obj); err != nil {
		return dst, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	text, err := json.Marshal(m.Content)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	part := make([]byte, 0, len(text)+80)
	part = append(part, `[{"type":"text","text":`...)
	part = append(part, text...)
	part = append(part, `,"cache_control":{"type":"ephemeral"}}]`...)
	obj["content"] = part
	out, err := json.Marshal(obj)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return append(dst, out...), nil
}

// schemaOpts say how tool schemas are adapted for the endpoint.
type schemaOpts struct {
	quirks       toolschema.Quirks
	strictModels []string
	dropEcho     []string // Message.Extra members not sent (the endpoint rejects them)
	noStreamOpts bool     // do not send stream_options
	breakpoints  []string // models whose requests carry cache_control breakpoints
	// responseFormat: models sent response_format json_schema for a
	// Request with an OutputSchema
	responseFormat []string
}

// encodeRest validates the tools and renders everything of the body but
// "messages" as one JSON object (no trailing newline). It is the same for
// every call of one agent, so Complete caches it (msgCache.storeRest).
//
// Tool schemas go out repaired by toolschema.Normalize and adapted to the
// endpoint's quirks (so.quirks), in strict mode for the models listed in
// so.strictModels.
func encodeRest(req *Request, stream bool, so schemaOpts) ([]byte, error) {
	rest := wireRest{Model: req.Model, Tools: req.Tools, Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	if stream {
		rest.Stream = true
		if !so.noStreamOpts {
			rest.StreamOptions = &wireStreamOpts{IncludeUsage: true}
		}
	}
	if len(req.OutputSchema) > 0 && slices.Contains(so.responseFormat, req.Model) {
		if !json.Valid(req.OutputSchema) {
			return nil, fmt.Errorf("%w: Request.OutputSchema is not valid JSON", ErrInvalidRequest)
		}
		rest.ResponseFormat = &wireResponseFormat{Type: "json_schema",
			JSONSchema: wireJSONSchema{Name: responseFormatName, Schema: req.OutputSchema, Strict: meetsStrict(req.OutputSchema)}}
	}
	q := so.quirks
	q.Strict = slices.Contains(so.strictModels, req.Model)
	if len(rest.Tools) > 0 {
		rest.Tools = append([]ToolSpec(nil), rest.Tools...)
	}
	for i := range rest.Tools {
		t := &rest.Tools[i]
		if t.Function.Name == "" {
			return nil, fmt.Errorf("%w: Request.Tools[%d] has no function name", ErrInvalidRequest, i)
		}
		if len(t.Function.Parameters) > 0 && !json.Valid(t.Function.Parameters) {
			return nil, fmt.Errorf("%w: parameters of tool %q are not valid JSON", ErrInvalidRequest, t.Function.Name)
		}
		params, _, err := toolschema.Normalize(t.Function.Parameters)
		if err == nil {
			params, _, err = toolschema.Adapt(params, q)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: parameters of tool %q: %v", ErrInvalidRequest, t.Function.Name, err)
		}
		t.Function.Parameters = params
		t.Function.Strict = t.Function.Strict || q.Strict
		if t.Type == "" {
			t.Type = "function"
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rest); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Message cache limits.
const (
	// cacheMinContent is the content size from which a message's encoding
	// is cached; below it, encoding is cheaper than bookkeeping.
	cacheMinContent = 512
	// cacheGenerationBytes bounds the encoded bytes of one cache
	// generation; at most two generations are held.
	cacheGenerationBytes = 16 << 20
)

// msgCache memoizes message encodings across calls. It is keyed by the
// identity of the content string (its data pointer and length) and an
// entry is used only when the whole message is equal to the one encoded,
// so a hit is O(1) for the unchanged strings an agent resends and a miss
// is never wrong. Eviction is by generation: when the current generation
// exceeds cacheGenerationBytes it becomes the old one (the previous old
// one is dropped), and hits in the old generation are promoted. Safe for
// concurrent use; the zero value is ready.
type msgCache struct {
	mu       sync.Mutex
	cur, old map[msgKey]*msgEntry
	curBytes int
	rest     *restEntry // the last request's non-message part
}

// restEntry is an encoded request minus its messages, with deep copies of
// what it was encoded from so a hit is never stale (a caller may reuse a
// tools slice with other contents).
type restEntry struct {
	model     string
	tools     []ToolSpec // Parameters cloned
	temp      *float64
	maxTokens int
	stream    bool
	schema    []byte // OutputSchema, cloned
	enc       []byte
}

// lookupRest returns the cached encoding of req's non-message part, or nil.
func (c *msgCache) lookupRest(req *Request, stream bool) []byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	e := c.rest
	c.mu.Unlock()
	if e == nil || e.model != req.Model || e.maxTokens != req.MaxTokens || e.stream != stream ||
		(e.temp == nil) != (req.Temperature == nil) || e.temp != nil && *e.temp != *req.Temperature ||
		len(e.tools) != len(req.Tools) || !bytes.Equal(e.schema, req.OutputSchema) {
		return nil
	}
	for i := range e.tools {
		a, b := &e.tools[i], &req.Tools[i]
		if a.Type != b.Type || a.Function.Name != b.Function.Name || a.Function.Description != b.Function.Description || a.Function.Strict != b.Function.Strict ||
			!bytes.Equal(a.Function.Parameters, b.Function.Parameters) {
			return nil
		}
	}
	return e.enc
}

// storeRest caches enc as the encoding of req's non-message part.
func (c *msgCache) storeRest(req *Request, stream bool, enc []byte) {
	if c == nil {
		return
	}
	e := &restEntry{model: req.Model, maxTokens: req.MaxTokens, stream: stream, enc: enc,
		tools: append([]ToolSpec(nil), req.Tools...), schema: bytes.Clone(req.OutputSchema)}
	for i := range e.tools {
		e.tools[i].Function.Parameters = bytes.Clone(e.tools[i].Function.Parameters)
	}
	if req.Temperature != nil {
		t := *req.Temperature
		e.temp = &t
	}
	c.mu.Lock()
	c.rest = e
	c.mu.Unlock()
}

type msgKey struct {
	data  *byte     // keeps the content alive while cached
	calls *ToolCall // or the tool calls
	n     int
}

type msgEntry struct {
	msg Message // the message as given (content shared, not copied)
	enc []byte
}

// keyOf identifies a message by its content string, or for a message
// with no large content by its tool-call array (an agent resends the same
// slice on every call).
func keyOf(m *Message) msgKey {
	if len(m.Content) < cacheMinContent && len(m.ToolCalls) > 0 {
		return msgKey{calls: &m.ToolCalls[0], n: len(m.ToolCalls)}
	}
	return msgKey{data: unsafe.StringData(m.Content), n: len(m.Content)}
}

// cacheable reports whether m's encoding is worth caching: large content,
// or tool calls (an agent's history is mostly tool-call and tool-result
// pairs; re-encoding the calls would cost time in proportion to the
// history on every call), or provider metadata.
func cacheable(m *Message) bool {
	return len(m.Content) >= cacheMinContent || len(m.ToolCalls) > 0 || len(m.Extra) > 0
}

// lookup returns the cached encoding for each message, nil where there is
// none; nil overall when nothing is cached or c is nil.
func (c *msgCache) lookup(msgs []Message) [][]byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) == 0 && len(c.old) == 0 {
		return nil
	}
	var out [][]byte
	for i := range msgs {
		m := &msgs[i]
		if !cacheable(m) {
			continue
		}
		k := keyOf(m)
		e := c.cur[k]
		if e == nil {
			if e = c.old[k]; e != nil {
				delete(c.old, k)
				c.put(k, e)
			}
		}
		if e == nil || !sameMessage(&e.msg, m) {
			continue
		}
		if out == nil {
			out = make([][]byte, len(msgs))
		}
		out[i] = e.enc
	}
	return out
}

func (c *msgCache) store(entries []msgEntry) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range entries {
		e := &entries[i]
		c.put(keyOf(&e.msg), e)
	}
}

func (c *msgCache) put(k msgKey, e *msgEntry) {
	if len(e.enc) > cacheGenerationBytes {
		return
	}
	if c.curBytes+len(e.enc) > cacheGenerationBytes {
		c.old, c.cur, c.curBytes = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = make(map[msgKey]*msgEntry)
	}
	if prev := c.cur[k]; prev != nil {
		c.curBytes -= len(prev.enc)
	}
	c.cur[k] = e
	c.curBytes += len(e.enc)
}

// sameMessage reports whether a and b encode identically. Content
// comparison is O(1) when both share the string data. It must compare
// every field of Message and ToolCall (TestSameMessageCoversAllFields).
func sameMessage(a, b *Message) bool {
	if a.Role != b.Role || a.ToolCallID != b.ToolCallID || a.Name != b.Name ||
		a.Content != b.Content || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	if len(a.Images) > 0 || len(b.Images) > 0 { // never cached (images.go)
		return false
	}
	if !bytes.Equal(a.Extra, b.Extra) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Type != y.Type || x.Function != y.Function || !bytes.Equal(x.Extra, y.Extra) {
			return false
		}
	}
	return true
}

// meetsStrict reports whether schema already follows OpenAI's strict
// structured-output rules (every object closed, every property required,
// only supported keywords): adapting it for strict mode would change
// nothing. Such a schema is sent with "strict": true, so the endpoint
// constrains the answer to it; any other is sent as guidance only,
// because making it strict would change what it means (optional
// properties would become required), and the answer is checked against
// the schema as given either way.
func meetsStrict(schema []byte) bool {
	_, repairs, err := toolschema.Adapt(schema, toolschema.Quirks{Strict: true})
	return err == nil && len(repairs) == 0
}
