package llm

import (
	"unicode/utf16"
	"unicode/utf8"
)

// This file decodes one streamed chat.completion.chunk without reflection
// and without allocating: the result is a chunkView whose strings are
// slices of the input, still JSON-escaped. encoding/json costs about 3–4 µs
// per chunk (a few hundred per answer), which alone would eat most of the
// agent loop's CPU budget per iteration; this decoder is an order of
// magnitude cheaper.
//
// It validates the whole input as JSON (RFC 8259, as strict as
// encoding/json, with the same nesting limit) and extracts only the fields
// the client needs. Its semantics are those of encoding/json decoding into
// a map: keys match exactly (after unescaping), a repeated key replaces the
// earlier value, and a field of an unexpected JSON type is ignored rather
// than being an error (unknown shapes are tolerated like unknown fields).
// FuzzDecodeChunk checks these claims against encoding/json.

// maxJSONDepth is the nesting limit, the same as encoding/json's.
const maxJSONDepth = 10000

// jstr is a JSON string found in the input.
type jstr struct {
	raw   []byte // bytes between the quotes, still escaped
	plain bool   // no escapes and ASCII only: raw is the value as is
	ok    bool   // a JSON string was present (false: absent, null or another type)
}

// toolDelta is one element of delta.tool_calls (or the legacy
// delta.function_call, with legacy set).
type toolDelta struct {
	index    int
	hasIndex bool
	legacy   bool
	id, typ  jstr
	name     jstr
	args     jstr
	extra    members // unknown members of the element, non-null
}

// member is a raw JSON object member: the unescaped key and the value's
// bytes in the input.
type member struct {
	key []byte
	val []byte
}

// members is a list of members whose keys are copied into buf (keys of the
// input may be unescaped into the scanner's scratch, which is reused).
type members struct {
	list []member
	buf  []byte
}

func (m *members) reset() {
	m.list, m.buf = m.list[:0], m.buf[:0]
}

// add records the member key: val (replacing an earlier member of that
// key, as a repeated key does in encoding/json), or only removes the
// earlier one when val is null. key is copied; val must stay valid as
// long as m is used (it points into the decoded input).
func (m *members) add(key, val []byte) {
	for i := range m.list {
		if string(m.list[i].key) == string(key) {
			m.list = append(m.list[:i], m.list[i+1:]...)
			break
		}
	}
	if string(val) == "null" {
		return
	}
	start := len(m.buf)
	m.buf = append(m.buf, key...)
	m.list = append(m.list, member{key: m.buf[start:len(m.buf):len(m.buf)], val: val})
}

// addRaw records the member whose key was just returned by objNext and
// whose value comes next in s.
func (m *members) addRaw(s *scanner, key []byte) {
	start := len(m.buf)
	m.buf = append(m.buf, key...) // key may live in s.keyBuf, which raw reuses
	k := m.buf[start:len(m.buf):len(m.buf)]
	m.buf = m.buf[:start]
	v := s.raw()
	if s.err != nil {
		return
	}
	m.add(k, v)
}

// choiceView is the part of one element of choices the client uses.
type choiceView struct {
	index      int
	hasIndex   bool
	content    jstr
	contentArr []byte // content sent as an array of parts (raw), or nil
	refusal    jstr
	reasoning  jstr // reasoning_content (DeepSeek, vLLM, …)
	reasoning2 jstr // reasoning (OpenRouter, Ollama, Groq)
	finish     jstr
	tools      []toolDelta
	legacy     toolDelta // delta.function_call, when hasLegacy
	hasLegacy  bool
	extra      members   // other members of delta, non-null (reasoning_details, …)
	usage      usageView // a usage object inside the choice (Moonshot)
}

func (c *choiceView) reset() {
	// Tool deltas past len are reset when toolCalls reuses them.
	c.extra.reset()
	*c = choiceView{tools: c.tools[:0], extra: c.extra}
}

// usageView is the chunk's usage object: every member that carries a
// token count in one of the shapes providers send (see usageView.usage).
type usageView struct {
	ok                   bool
	prompt, completion   int
	hasPrompt, hasCompl  bool
	cached, cacheHit     int // prompt_tokens_details.cached_tokens; DeepSeek's prompt_cache_hit_tokens
	hasCached, hasCacheH bool
	cacheRead, cacheNew  int // Anthropic style: cache_read_input_tokens, cache_creation_input_tokens
	hasRead, hasNew      bool
	detailsWrite         int // OpenRouter: prompt_tokens_details.cache_write_tokens
	hasDetailsWrite      bool
	topCached            int // Moonshot: usage.cached_tokens
	hasTopCached         bool
}

// errorView is an error object sent inside the stream.
type errorView struct {
	ok            bool
	message, typ  jstr
	code          jstr // a string code, or the literal of a numeric one
	codeIsNumeric bool
	metaRaw       []byte // metadata.raw as it is in the input (OpenRouter's upstream error)
	provider      jstr   // metadata.provider_name
}

// chunkView is the decoded form of one chunk. Its jstr fields point into
// the decoded input and are valid until that buffer is reused.
type chunkView struct {
	model     jstr
	hasChoice bool       // choice holds the choice with index 0
	choice    choiceView // the selected choice
	tmp       choiceView // scratch for the element being decoded
	usage     usageView  // top-level usage, else x_groq.usage, else the choice's
	groqUsage usageView
	err       errorView
}

// scanner walks JSON input. Errors are sticky: after the first one every
// method returns at once and err says what and where.
type scanner struct {
	b      []byte
	i      int
	depth  int
	err    error
	keyBuf []byte // scratch for keys with escapes
}

// strSafe[c] is true for bytes that may appear unescaped in a JSON string
// and keep it "plain" (ASCII, not '"' or '\\', not a control byte).
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) fail(what string) {
	if s.err == nil {
		s.err = malformedf("invalid JSON at byte %d: %s", s.i, what)
	}
	s.i = len(s.b)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str decodes a string; s.b[s.i] must be '"'.
func (s *scanner) str() jstr {
	s.i++
	start, plain := s.i, true
	b := s.b
	for s.i < len(b) {
		c := b[s.i]
		if strSafe[c] {
			s.i++
			continue
		}
		switch {
		case c == '"':
			raw := b[start:s.i]
			s.i++
			return jstr{raw: raw, plain: plain, ok: true}
		case c == '\\':
			plain = false
			if s.i+1 >= len(b) {
				s.fail("unterminated escape")
				return jstr{}
			}
			switch b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(b) || !isHex(b[s.i+2]) || !isHex(b[s.i+3]) || !isHex(b[s.i+4]) || !isHex(b[s.i+5]) {
					s.fail(`invalid \u escape`)
					return jstr{}
				}
				s.i += 6
			default:
				s.fail("invalid escape")
				return jstr{}
			}
		case c < 0x20:
			s.fail("control character in string")
			return jstr{}
		default: // non-ASCII byte; validated when unescaped
			plain = false
			s.i++
		}
	}
	s.fail("unterminated string")
	return jstr{}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// num scans a number and returns its literal; s.b[s.i] must start one.
func (s *scanner) num() []byte {
	b, start := s.b, s.i
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(b):
		s.fail("truncated number")
		return nil
	case b[s.i] == '0':
		s.i++
	case '1' <= b[s.i] && b[s.i] <= '9':
		for s.i++; s.i < len(b) && isDigit(b[s.i]); s.i++ {
		}
	default:
		s.fail("invalid number")
		return nil
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if s.i >= len(b) || !isDigit(b[s.i]) {
			s.fail("invalid number fraction")
			return nil
		}
		for s.i < len(b) && isDigit(b[s.i]) {
			s.i++
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(b) || !isDigit(b[s.i]) {
			s.fail("invalid number exponent")
			return nil
		}
		for s.i < len(b) && isDigit(b[s.i]) {
			s.i++
		}
	}
	return b[start:s.i]
}

func (s *scanner) lit(word string) {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		s.fail("invalid literal")
		return
	}
	s.i += len(word)
}

// skip consumes and validates one value of any type.
func (s *scanner) skip() {
	switch s.peek() {
	case '{':
		if !s.objBegin() {
			return
		}
		for first := true; s.err == nil; first = false {
			if _, ok := s.objNext(first); !ok {
				return
			}
			s.skip()
		}
	case '[':
		if !s.arrBegin() {
			return
		}
		for first := true; s.err == nil; first = false {
			if !s.arrNext(first) {
				return
			}
			s.skip()
		}
	case '"':
		s.str()
	case 't':
		s.lit("true")
	case 'f':
		s.lit("false")
	case 'n':
		s.lit("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s.num()
	case 0:
		s.fail("unexpected end of input")
	default:
		s.fail("unexpected character")
	}
}

// objBegin consumes '{' (the caller checked it is next).
func (s *scanner) objBegin() bool {
	if s.depth++; s.depth > maxJSONDepth {
		s.fail("nesting too deep")
		return false
	}
	s.i++
	return true
}

// objNext moves to the next member and returns its (unescaped) key, valid
// until the next call; ok is false at the closing brace or on error.
func (s *scanner) objNext(first bool) (key []byte, ok bool) {
	if s.err != nil {
		return nil, false
	}
	c := s.peek()
	if c == '}' && first {
		s.i++
		s.depth--
		return nil, false
	}
	if !first {
		switch c {
		case ',':
			s.i++
			c = s.peek()
		case '}':
			s.i++
			s.depth--
			return nil, false
		default:
			s.fail("expected ',' or '}' in object")
			return nil, false
		}
	}
	if c != '"' {
		s.fail("expected string key in object")
		return nil, false
	}
	k := s.str()
	if s.err != nil {
		return nil, false
	}
	key = k.raw
	if !k.plain {
		s.keyBuf = appendUnescaped(s.keyBuf[:0], k.raw)
		key = s.keyBuf
	}
	if s.peek() != ':' {
		s.fail("expected ':' after object key")
		return nil, false
	}
	s.i++
	return key, true
}

// arrBegin consumes '[' (the caller checked it is next).
func (s *scanner) arrBegin() bool {
	if s.depth++; s.depth > maxJSONDepth {
		s.fail("nesting too deep")
		return false
	}
	s.i++
	return true
}

// arrNext moves to the next element; false at the closing bracket or on
// error.
func (s *scanner) arrNext(first bool) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == ']' && first {
		s.i++
		s.depth--
		return false
	}
	if !first {
		switch c {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return false
		default:
			s.fail("expected ',' or ']' in array")
			return false
		}
	}
	return true
}

// strField decodes a value expected to be a string; other types (null
// included) are skipped and reported as absent.
func (s *scanner) strField() jstr {
	if s.peek() == '"' {
		return s.str()
	}
	s.skip()
	return jstr{}
}

// intField decodes a value expected to be an integer that fits int64;
// anything else is skipped and reported as absent.
func (s *scanner) intField() (int, bool) {
	c := s.peek()
	if c != '-' && !isDigit(c) {
		s.skip()
		return 0, false
	}
	return parseInt(s.num())
}

// parseInt parses a validated JSON number literal as a signed 64-bit
// integer, like strconv.ParseInt(lit, 10, 64): no fraction, no exponent,
// no overflow.
func parseInt(lit []byte) (int, bool) {
	neg := false
	if len(lit) > 0 && lit[0] == '-' {
		neg, lit = true, lit[1:]
	}
	if len(lit) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range lit {
		if !isDigit(c) {
			return 0, false
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return int(-int64(n)), true //nolint:gosec // range checked above
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int(n), true
}

// decodeChunk decodes data into v, reusing v's buffers. On error v is in
// an unspecified state.
func (s *scanner) decodeChunk(data []byte, v *chunkView) error {
	s.b, s.i, s.depth, s.err = data, 0, 0, nil
	v.model = jstr{}
	v.hasChoice = false
	v.choice.reset()
	v.usage = usageView{}
	v.groqUsage = usageView{}
	v.err = errorView{}
	if s.peek() != '{' {
		s.fail("chunk is not a JSON object")
		return s.err
	}
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			break
		}
		switch string(key) {
		case "model":
			v.model = s.strField()
		case "choices":
			s.choices(v)
		case "usage":
			s.usage(&v.usage)
		case "x_groq": // Groq's last chunk: {"x_groq":{"usage":{…}}}
			s.groq(&v.groqUsage)
		case "error":
			s.errorObj(&v.err)
		default:
			s.skip()
		}
	}
	if s.err == nil {
		if s.ws(); s.i != len(s.b) {
			s.fail("data after the chunk object")
		}
	}
	if !v.usage.ok {
		switch {
		case v.groqUsage.ok:
			v.usage = v.groqUsage
		case v.hasChoice && v.choice.usage.ok:
			v.usage = v.choice.usage
		}
	}
	return s.err
}

// choices selects the choice with index 0: an element whose "index" is 0,
// or the first element when it has no integer index. When several qualify,
// the last one wins.
func (s *scanner) choices(v *chunkView) {
	v.hasChoice = false
	if s.peek() != '[' {
		s.skip()
		return
	}
	s.arrBegin()
	for pos, first := 0, true; ; pos, first = pos+1, false {
		if !s.arrNext(first) {
			return
		}
		if s.peek() != '{' {
			s.skip()
			continue
		}
		c := &v.tmp
		c.reset()
		s.objBegin()
		for first := true; ; first = false {
			key, ok := s.objNext(first)
			if !ok {
				break
			}
			switch string(key) {
			case "index":
				c.index, c.hasIndex = s.intField()
			case "delta":
				s.delta(c)
			case "finish_reason":
				c.finish = s.strField()
			case "usage": // Moonshot puts the usage inside the last choice
				s.usage(&c.usage)
			default:
				s.skip()
			}
		}
		if s.err != nil {
			return
		}
		if (c.hasIndex && c.index == 0) || (!c.hasIndex && pos == 0) {
			v.choice, v.tmp = v.tmp, v.choice
			v.hasChoice = true
		}
	}
}

func (s *scanner) delta(c *choiceView) {
	c.content, c.contentArr, c.refusal, c.reasoning, c.reasoning2 = jstr{}, nil, jstr{}, jstr{}, jstr{}
	c.hasLegacy = false
	c.tools = c.tools[:0]
	c.extra.reset()
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			return
		}
		switch string(key) {
		case "content":
			c.contentArr = nil
			if s.peek() == '[' {
				c.content = jstr{}
				c.contentArr = s.raw()
			} else {
				c.content = s.strField()
			}
		case "refusal":
			c.refusal = s.strField()
		case "reasoning_content":
			c.reasoning = s.strField()
		case "reasoning":
			c.reasoning2 = s.strField()
		case "tool_calls":
			s.toolCalls(c)
		case "function_call":
			s.functionCall(c)
		case "role":
			s.skip()
		default: // reasoning_details, provider fields
			c.extra.addRaw(s, key)
		}
	}
}

// raw consumes one value and returns its bytes in the input.
func (s *scanner) raw() []byte {
	s.ws()
	start := s.i
	s.skip()
	if s.err != nil {
		return nil
	}
	return s.b[start:s.i]
}

// functionCall decodes the legacy delta.function_call as a tool delta.
func (s *scanner) functionCall(c *choiceView) {
	c.hasLegacy = false
	if s.peek() != '{' {
		s.skip()
		return
	}
	c.legacy = toolDelta{legacy: true}
	c.hasLegacy = true
	s.function(&c.legacy)
}

func (s *scanner) toolCalls(c *choiceView) {
	c.tools = c.tools[:0]
	if s.peek() != '[' {
		s.skip()
		return
	}
	s.arrBegin()
	for first := true; ; first = false {
		if !s.arrNext(first) {
			return
		}
		if s.peek() != '{' {
			s.skip()
			continue
		}
		if len(c.tools) < cap(c.tools) {
			c.tools = c.tools[:len(c.tools)+1]
			t := &c.tools[len(c.tools)-1]
			ex := t.extra
			ex.reset()
			*t = toolDelta{extra: ex}
		} else {
			c.tools = append(c.tools, toolDelta{})
		}
		t := &c.tools[len(c.tools)-1]
		s.objBegin()
		for first := true; ; first = false {
			key, ok := s.objNext(first)
			if !ok {
				break
			}
			switch string(key) {
			case "index":
				t.index, t.hasIndex = s.intField()
			case "id":
				t.id = s.strField()
			case "type":
				t.typ = s.strField()
			case "function":
				s.function(t)
			default: // extra_content (Gemini 3), provider fields
				t.extra.addRaw(s, key)
			}
		}
	}
}

func (s *scanner) function(t *toolDelta) {
	t.name, t.args = jstr{}, jstr{}
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			return
		}
		switch string(key) {
		case "name":
			t.name = s.strField()
		case "arguments":
			t.args = s.strField()
		default:
			s.skip()
		}
	}
}

func (s *scanner) usage(u *usageView) {
	*u = usageView{}
	if s.peek() != '{' {
		s.skip()
		return
	}
	u.ok = true
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			return
		}
		switch string(key) {
		case "prompt_tokens":
			u.prompt, u.hasPrompt = s.intField()
		case "completion_tokens":
			u.completion, u.hasCompl = s.intField()
		case "prompt_cache_hit_tokens": // DeepSeek
			u.cacheHit, u.hasCacheH = s.intField()
		case "cache_read_input_tokens": // Anthropic style (LiteLLM, OpenRouter)
			u.cacheRead, u.hasRead = s.intField()
		case "cache_creation_input_tokens":
			u.cacheNew, u.hasNew = s.intField()
		case "cached_tokens": // Moonshot
			u.topCached, u.hasTopCached = s.intField()
		case "prompt_tokens_details":
			u.cached, u.hasCached = 0, false
			u.detailsWrite, u.hasDetailsWrite = 0, false
			if s.peek() != '{' {
				s.skip()
				continue
			}
			s.objBegin()
			for first := true; ; first = false {
				key, ok := s.objNext(first)
				if !ok {
					break
				}
				switch string(key) {
				case "cached_tokens":
					u.cached, u.hasCached = s.intField()
				case "cache_write_tokens":
					u.detailsWrite, u.hasDetailsWrite = s.intField()
				default:
					s.skip()
				}
			}
		default:
			s.skip()
		}
	}
}

// usage is the Usage a usage object reports, by one rule for every shape
// and both paths:
//
//   - cached (read from the cache) is the first present of
//     prompt_tokens_details.cached_tokens (OpenAI, xAI, Gemini, OpenRouter),
//     prompt_cache_hit_tokens (DeepSeek), cache_read_input_tokens (Anthropic
//     style, through LiteLLM or OpenRouter) and a top-level cached_tokens
//     (Moonshot);
//   - written to the cache is prompt_tokens_details.cache_write_tokens
//     (OpenRouter) or cache_creation_input_tokens;
//   - when a body uses the Anthropic members and its prompt_tokens is
//     smaller than read plus written, prompt_tokens counts only the
//     uncached part (Anthropic's own input_tokens rule) and the total is
//     their sum; otherwise prompt_tokens already includes both (the
//     OpenAI rule every gateway follows);
//   - negative counts are 0 and neither part exceeds the prompt.
func (u *usageView) usage() Usage {
	out := Usage{PromptTokens: max(u.prompt, 0), CompletionTokens: max(u.completion, 0)}
	switch {
	case u.hasCached:
		out.CachedTokens = u.cached
	case u.hasCacheH:
		out.CachedTokens = u.cacheHit
	case u.hasRead:
		out.CachedTokens = u.cacheRead
	case u.hasTopCached:
		out.CachedTokens = u.topCached
	}
	switch {
	case u.hasDetailsWrite:
		out.CacheWriteTokens = u.detailsWrite
	case u.hasNew:
		out.CacheWriteTokens = u.cacheNew
	}
	out.CachedTokens, out.CacheWriteTokens = max(out.CachedTokens, 0), max(out.CacheWriteTokens, 0)
	if (u.hasRead || u.hasNew) && !u.hasCached && !u.hasDetailsWrite &&
		out.PromptTokens < out.CachedTokens+out.CacheWriteTokens {
		out.PromptTokens += out.CachedTokens + out.CacheWriteTokens
	}
	out.CachedTokens = min(out.CachedTokens, out.PromptTokens)
	out.CacheWriteTokens = min(out.CacheWriteTokens, out.PromptTokens-out.CachedTokens)
	return out
}

// groq decodes Groq's x_groq object, taking its usage when present.
func (s *scanner) groq(u *usageView) {
	*u = usageView{}
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			return
		}
		if string(key) == "usage" && s.peek() == '{' {
			s.usage(u)
		} else {
			s.skip()
		}
	}
}

// errorObj decodes "error": an object with message/type/code, or a bare
// string taken as the message. Anything else (null included) is no error.
func (s *scanner) errorObj(e *errorView) {
	*e = errorView{}
	switch s.peek() {
	case '"':
		e.ok = true
		e.message = s.str()
		return
	case '{':
	default:
		s.skip()
		return
	}
	e.ok = true
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			return
		}
		switch string(key) {
		case "message":
			e.message = s.strField()
		case "type":
			e.typ = s.strField()
		case "code":
			e.code, e.codeIsNumeric = jstr{}, false
			switch c := s.peek(); {
			case c == '"':
				e.code = s.str()
			case c == '-' || isDigit(c):
				e.code = jstr{raw: s.num(), plain: true, ok: true}
				e.codeIsNumeric = true
			default:
				s.skip()
			}
		case "metadata":
			s.errorMetadata(e)
		default:
			s.skip()
		}
	}
}

// errorMetadata decodes error.metadata: OpenRouter relays the upstream
// provider's own error there (raw, a string or an object, kept as its
// input bytes) with provider_name.
func (s *scanner) errorMetadata(e *errorView) {
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.objBegin()
	for first := true; ; first = false {
		key, ok := s.objNext(first)
		if !ok {
			return
		}
		switch string(key) {
		case "raw":
			switch s.peek() {
			case '"', '{':
				e.metaRaw = s.raw()
			default:
				s.skip()
			}
		case "provider_name":
			e.provider = s.strField()
		default:
			s.skip()
		}
	}
}

// appendStr appends the value of j to dst.
func appendStr(dst []byte, j jstr) []byte {
	if j.plain {
		return append(dst, j.raw...)
	}
	return appendUnescaped(dst, j.raw)
}

// appendUnescaped appends the value of the validated JSON string body raw
// to dst, exactly as encoding/json decodes it: escapes resolved, a valid
// surrogate pair combined, a lone surrogate and each byte of invalid UTF-8
// replaced by U+FFFD.
func appendUnescaped(dst, raw []byte) []byte {
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			if r+1 >= len(raw) {
				return dst // unreachable for validated input
			}
			switch e := raw[r+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := getU4(raw[r:])
				if rr < 0 {
					return dst // unreachable for validated input
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getU4(raw[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
						r += 6
						dst = utf8.AppendRune(dst, dec)
						continue
					}
					rr = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, rr)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			if rr == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[r:r+size]...)
			}
			r += size
		}
	}
	return dst
}

// getU4 decodes the \uXXXX escape at the start of b, -1 if there is none.
func getU4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
