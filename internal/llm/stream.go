package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/odekrun/odek/internal/jsonwire"
)

// MaxToolCalls bounds the tool calls in one response; more is treated as
// a malformed response. It also keeps the per-delta lookup of a call by
// index cheap.
const MaxToolCalls = 256

// callAcc accumulates one tool call from its deltas.
type callAcc struct {
	index         int
	id, name, typ string
	args          []byte
	legacy        bool   // from function_call
	extra         []byte // JSON object members (without braces) of the call's unknown fields, first value of each key
	extraKeys     []string
}

// metaField is one unknown member of the assistant message's deltas.
// String values are concatenated across deltas, array values have their
// elements appended, anything else keeps the last value.
type metaField struct {
	key   string
	kind  byte // 's' string, 'a' array, 'v' other
	buf   []byte
	elems [][]byte // kind 'a': the raw elements, copied
}

// assembler turns chunks into a Response. The rules for tool-call deltas:
//
//   - Deltas are keyed by "index"; a new index starts a new call. Calls are
//     output in ascending index order whatever order they arrived in (in
//     arrival order for equal indices); gaps in the indices are not filled.
//   - id, type and name take the first non-empty value seen for the call
//     (providers send them in the first delta only; some repeat them,
//     which is then harmless). arguments fragments are concatenated.
//   - A delta with an index and an id that differs from the (non-empty) id
//     of the latest call with that index starts a new call: some servers
//     send parallel calls all with index 0 and distinct ids.
//   - A delta without an integer index continues the most recent call,
//     unless (a) there is no call yet, (b) it carries an id different from
//     that call's id, (c) it is not the first element of its delta's
//     tool_calls array (two elements of one array are two calls: Gemini
//     sends parallel calls whole in one delta, without index and with
//     empty ids), or (d) it carries a name while the current call has a
//     name and complete JSON arguments (Gemini sends each call whole).
//     Then it starts a new call with the index after the largest seen.
//   - The legacy delta.function_call is one call of its own.
//   - Unknown members of a tool-call delta (extra_content) keep their
//     first non-null value and go to ToolCall.Extra.
//   - On output an empty id stays empty (the caller owns synthetic ids),
//     and so does an id repeated from an earlier call of the response; an
//     empty type becomes "function", and empty arguments "{}" (what a call
//     without parameters means; several providers send ""). A call with no
//     id, name or arguments at all is dropped.
//
// Only the choice with index 0 is used; content of other choices (n > 1)
// is ignored. Content may be a string or an array of parts: text parts are
// the answer, thinking parts reasoning. reasoning_content / reasoning never
// reach the content: they become Response.Reasoning and, with every other
// unknown member of the deltas, Message.Extra.
type assembler struct {
	content   []byte
	reasoning []byte
	meta      []metaField
	calls     []callAcc
	finish    string
	model     string
	usage     Usage
	sawFinish bool
	done      bool // [DONE] seen

	// Leading <think> handling: think is 0 while undecided (nothing or a
	// prefix of "<think>" seen), 1 once content is plain answer, 2 when
	// disabled (KeepThinkTags). sent is how much of content onDelta has.
	think      byte
	sent       int
	onDelta    func(string)
	delivered  bool      // onDelta was called at least once
	firstDelta time.Time // first content, reasoning or tool-call delta; zero until then
	scratch    []byte
}

func (a *assembler) reset(onDelta func(string), keepThink bool) {
	for i := range a.calls {
		a.calls[i] = callAcc{args: a.calls[i].args[:0], extra: a.calls[i].extra[:0], extraKeys: a.calls[i].extraKeys[:0]}
	}
	*a = assembler{
		content:   a.content[:0],
		reasoning: a.reasoning[:0],
		meta:      a.meta[:0],
		calls:     a.calls[:0],
		scratch:   a.scratch[:0],
		onDelta:   onDelta,
	}
	if keepThink {
		a.think = 2
	}
}

// apply merges one decoded chunk. It returns an *APIError for an error
// object sent in the stream.
func (a *assembler) apply(v *chunkView) error {
	if v.err.ok {
		return streamAPIError(&v.err)
	}
	if a.model == "" && v.model.ok {
		a.model = a.str(v.model)
	}
	if v.usage.ok {
		a.usage = v.usage.usage()
	}
	if !v.hasChoice {
		return nil
	}
	c := &v.choice
	if c.reasoning.ok && len(c.reasoning.raw) > 0 {
		a.reasoning = appendStr(a.reasoning, c.reasoning)
		a.metaString("reasoning_content", c.reasoning)
		a.markDelta()
	}
	if c.reasoning2.ok && len(c.reasoning2.raw) > 0 {
		if !c.reasoning.ok || len(c.reasoning.raw) == 0 { // both: the same text twice
			a.reasoning = appendStr(a.reasoning, c.reasoning2)
		}
		a.metaString("reasoning", c.reasoning2)
		a.markDelta()
	}
	for _, m := range c.extra.list {
		a.metaValue(string(m.key), m.val)
	}
	if c.contentArr != nil {
		text, thinking := contentParts(c.contentArr)
		a.reasoning = append(a.reasoning, thinking...)
		if text != "" {
			a.addContent([]byte(text))
		}
	}
	for _, j := range [2]jstr{c.content, c.refusal} {
		if !j.ok || len(j.raw) == 0 {
			continue
		}
		a.scratch = appendStr(a.scratch[:0], j)
		a.addContent(a.scratch)
	}
	for i := range c.tools {
		a.applyTool(&c.tools[i], i)
	}
	if c.hasLegacy {
		a.applyTool(&c.legacy, 0)
	}
	if len(a.calls) > MaxToolCalls {
		return malformedf("more than %d tool calls in one response (MaxToolCalls)", MaxToolCalls)
	}
	if c.finish.ok && len(c.finish.raw) > 0 {
		a.finish = a.finishString(c.finish)
		a.sawFinish = true
	}
	return nil
}

// addContent appends answer text and passes what is decided to be answer
// (not a leading <think> block) to onDelta.
func (a *assembler) addContent(text []byte) {
	a.markDelta()
	a.content = append(a.content, text...)
	if a.think == 0 {
		a.decideThink(false)
		if a.think == 0 {
			return
		}
	}
	a.deliver()
}

func (a *assembler) deliver() {
	if a.onDelta != nil && len(a.content) > a.sent {
		a.delivered = true
		a.onDelta(string(a.content[a.sent:]))
	}
	a.sent = len(a.content)
}

// decideThink looks at the content so far: a leading <think>…</think>
// block moves to reasoning; at the end of the stream (final) an unclosed
// block is all reasoning.
func (a *assembler) decideThink(final bool) {
	const open, closeTag = "<think>", "</think>"
	rest := bytes.TrimLeft(a.content, " \t\r\n")
	switch {
	case len(rest) < len(open) && bytes.HasPrefix([]byte(open), rest):
		if final {
			a.think = 1
		}
		return
	case !bytes.HasPrefix(rest, []byte(open)):
		a.think = 1
		return
	}
	end := bytes.Index(rest, []byte(closeTag))
	if end < 0 {
		if final {
			a.reasoning = append(a.reasoning, rest[len(open):]...)
			a.content = a.content[:0]
			a.think = 1
		}
		return
	}
	a.reasoning = append(a.reasoning, bytes.TrimSpace(rest[len(open):end])...)
	answer := bytes.TrimLeft(rest[end+len(closeTag):], " \t\r\n")
	a.content = append(a.content[:0], answer...)
	a.think = 1
}

// finishContent settles a pending <think> decision at the end of a
// successful stream and delivers what is left.
func (a *assembler) finishContent() {
	if a.think == 0 {
		a.decideThink(true)
	}
	a.deliver()
}

func (a *assembler) metaField(key string, kind byte) *metaField {
	for i := range a.meta {
		if a.meta[i].key == key {
			return &a.meta[i]
		}
	}
	a.meta = append(a.meta, metaField{key: key, kind: kind})
	return &a.meta[len(a.meta)-1]
}

func (a *assembler) metaString(key string, j jstr) {
	f := a.metaField(key, 's')
	if f.kind != 's' {
		f.kind, f.buf, f.elems = 's', f.buf[:0], nil
	}
	f.buf = appendStr(f.buf, j)
}

// metaValue merges one unknown delta member (val is raw, non-null JSON);
// empty arrays and objects carry nothing and are skipped.
func (a *assembler) metaValue(key string, val []byte) {
	if jsonwire.Empty(val) {
		return
	}
	switch val[0] {
	case '"':
		var s scanner
		s.b = val
		a.metaString(key, s.str())
	case '[':
		f := a.metaField(key, 'a')
		if f.kind != 'a' {
			f.kind, f.buf, f.elems = 'a', nil, nil
		}
		var s scanner
		s.b = val
		s.arrBegin()
		for first := true; s.arrNext(first); first = false {
			s.ws()
			start := s.i
			s.skip()
			f.elems = append(f.elems, bytes.Clone(val[start:s.i]))
		}
	default:
		f := a.metaField(key, 'v')
		f.kind, f.elems = 'v', nil
		f.buf = append(f.buf[:0], val...)
	}
}

func (a *assembler) markDelta() {
	if a.firstDelta.IsZero() {
		a.firstDelta = time.Now()
	}
}

func (a *assembler) applyTool(t *toolDelta, pos int) {
	a.markDelta()
	hasID := t.id.ok && len(t.id.raw) > 0
	var c *callAcc
	switch {
	case t.legacy:
		for i := range a.calls {
			if a.calls[i].legacy {
				c = &a.calls[i]
			}
		}
		if c == nil {
			c = a.newCall(a.nextIndex())
			c.legacy = true
		}
	case t.hasIndex:
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].index == t.index && !a.calls[i].legacy {
				c = &a.calls[i]
				break
			}
		}
		if c == nil || hasID && c.id != "" && !a.equal(c.id, t.id) {
			c = a.newCall(t.index)
		}
	case len(a.calls) == 0:
		c = a.newCall(0)
	default:
		c = &a.calls[len(a.calls)-1]
		hasName := t.name.ok && len(t.name.raw) > 0
		if pos > 0 || hasID && c.id != "" && !a.equal(c.id, t.id) ||
			hasName && c.name != "" && !hasID && len(c.args) > 0 && json.Valid(c.args) {
			c = a.newCall(a.nextIndex())
		}
	}
	if c.id == "" && hasID {
		c.id = a.str(t.id)
	}
	if c.typ == "" && t.typ.ok && len(t.typ.raw) > 0 {
		c.typ = a.str(t.typ)
	}
	if c.name == "" && t.name.ok && len(t.name.raw) > 0 {
		c.name = a.str(t.name)
	}
	if t.args.ok {
		c.args = appendStr(c.args, t.args)
	}
	for _, m := range t.extra.list {
		if slices.Contains(c.extraKeys, string(m.key)) || isOneOf(m.key, toolCallKeys) || isOneOf(m.key, []string{"index"}) || jsonwire.Empty(m.val) {
			continue
		}
		c.extraKeys = append(c.extraKeys, string(m.key))
		if len(c.extra) > 0 {
			c.extra = append(c.extra, ',')
		}
		c.extra = jsonwire.AppendString(c.extra, string(m.key))
		c.extra = append(c.extra, ':')
		c.extra = appendCompact(c.extra, m.val)
	}
}

// nextIndex is the index after the largest seen.
func (a *assembler) nextIndex() int {
	if len(a.calls) == 0 {
		return 0
	}
	top := a.calls[0].index
	for _, k := range a.calls[1:] {
		top = max(top, k.index)
	}
	return top + 1
}

func (a *assembler) newCall(index int) *callAcc {
	if len(a.calls) < cap(a.calls) {
		a.calls = a.calls[:len(a.calls)+1]
		c := &a.calls[len(a.calls)-1]
		*c = callAcc{index: index, args: c.args[:0], extra: c.extra[:0], extraKeys: c.extraKeys[:0]}
		return c
	}
	a.calls = append(a.calls, callAcc{index: index})
	return &a.calls[len(a.calls)-1]
}

// str returns the value of j as a new string.
func (a *assembler) str(j jstr) string {
	if j.plain {
		return string(j.raw)
	}
	a.scratch = appendUnescaped(a.scratch[:0], j.raw)
	return string(a.scratch)
}

// equal reports whether s equals the value of j, without allocating.
func (a *assembler) equal(s string, j jstr) bool {
	if j.plain {
		return s == string(j.raw)
	}
	a.scratch = appendUnescaped(a.scratch[:0], j.raw)
	return s == string(a.scratch)
}

// finishString returns the finish reason, without allocating for the
// common ones.
func (a *assembler) finishString(j jstr) string {
	for _, s := range [...]string{"stop", "tool_calls", "length", "content_filter", "function_call"} {
		if a.equal(s, j) {
			return s
		}
	}
	return a.str(j)
}

// message builds the assistant message; the strings are copies, so the
// assembler may be reused afterwards.
func (a *assembler) message() Message {
	m := Message{Role: RoleAssistant, Content: string(a.content), Extra: a.extra()}
	calls := a.calls
	// Insertion sort by index (stable): calls almost always arrive in order.
	for i := 1; i < len(calls); i++ {
		for j := i; j > 0 && calls[j].index < calls[j-1].index; j-- {
			calls[j], calls[j-1] = calls[j-1], calls[j]
		}
	}
	for _, c := range calls {
		if c.id == "" && c.name == "" && len(c.args) == 0 {
			continue
		}
		tc := ToolCall{ID: c.id, Type: c.typ, Function: FunctionCall{Name: c.name, Arguments: string(c.args)}}
		if len(c.extra) > 0 {
			tc.Extra = make(json.RawMessage, 0, len(c.extra)+2)
			tc.Extra = append(append(append(tc.Extra, '{'), c.extra...), '}')
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	finishCalls(m.ToolCalls)
	return m
}

// complete reports whether what arrived so far is a whole reply: some
// content or reasoning or calls, and every call's arguments complete JSON.
func (a *assembler) complete() bool {
	if len(a.content) == 0 && len(a.reasoning) == 0 && len(a.calls) == 0 {
		return false
	}
	for i := range a.calls {
		if args := bytes.TrimSpace(a.calls[i].args); len(args) > 0 && !json.Valid(args) {
			return false
		}
	}
	return true
}

// truncated returns the error for a tool call cut off by a length finish.
func (a *assembler) truncated() error {
	if a.finish != "length" {
		return nil
	}
	names := make([]string, len(a.calls))
	args := make([][]byte, len(a.calls))
	for i := range a.calls {
		names[i], args[i] = a.calls[i].name, a.calls[i].args
	}
	return checkTruncated(a.finish, names, args)
}

// finishCalls completes assembled calls: type "function" when empty,
// arguments "{}" when empty, and an id repeated from an earlier call of
// the same response cleared (the caller assigns a synthetic one).
func finishCalls(calls []ToolCall) {
	for i := range calls {
		tc := &calls[i]
		if tc.Type == "" {
			tc.Type = "function"
		}
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			tc.Function.Arguments = "{}"
		}
		for j := 0; j < i && tc.ID != ""; j++ {
			if calls[j].ID == tc.ID {
				tc.ID = ""
			}
		}
	}
}

// extra renders the message's unknown delta members as one JSON object,
// in arrival order; nil when there are none.
func (a *assembler) extra() json.RawMessage {
	var out []byte
	for i := range a.meta {
		f := &a.meta[i]
		if isOneOf([]byte(f.key), outputOnly) || isOneOf([]byte(f.key), messageKeys) {
			continue
		}
		if len(out) == 0 {
			out = append(out, '{')
		} else {
			out = append(out, ',')
		}
		out = jsonwire.AppendString(out, f.key)
		out = append(out, ':')
		switch f.kind {
		case 's':
			out = jsonwire.AppendString(out, string(f.buf))
		case 'a':
			out = append(out, '[')
			for k, e := range mergeElements(f.elems) {
				if k > 0 {
					out = append(out, ',')
				}
				out = appendCompact(out, e)
			}
			out = append(out, ']')
		default:
			out = appendCompact(out, f.buf)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return append(out, '}')
}

// streamState is the reusable per-call parsing state of a stream.
type streamState struct {
	br   *bufio.Reader
	sse  sseReader
	scan scanner
	view chunkView
	asm  assembler
}

// maxPooledBytes keeps a streamState out of the pool when its buffers grew
// beyond this (a rare huge answer should not pin memory).
const maxPooledBytes = 1 << 20

var streamPool = sync.Pool{New: func() any {
	return &streamState{br: bufio.NewReaderSize(nil, 32<<10)}
}}

func getStreamState(r io.Reader, maxLine int, onDelta func(string), keepThink bool) *streamState {
	st := streamPool.Get().(*streamState)
	st.br.Reset(r)
	st.sse.reset(st.br, maxLine)
	st.asm.reset(onDelta, keepThink)
	return st
}

func putStreamState(st *streamState) {
	size := cap(st.sse.long) + cap(st.sse.data) + cap(st.asm.content) + cap(st.asm.scratch) + cap(st.scan.keyBuf)
	for _, c := range st.asm.calls[:cap(st.asm.calls)] {
		size += cap(c.args)
	}
	if size > maxPooledBytes {
		return
	}
	st.br.Reset(nil)
	st.sse.r = nil
	st.asm.onDelta = nil
	st.scan.b = nil
	streamPool.Put(st)
}

// readStream consumes an event stream into st.asm. It returns nil once
// [DONE] arrived, or at the end of the body after a finish_reason, or at
// the end of a body that brought an answer or tool calls whose arguments
// are all complete JSON (servers that close the stream without
// finish_reason or [DONE]); ErrStreamInterrupted at an end before that; the read error (body errors are the caller's to
// interpret), a *LineTooLongError, an *APIError from an error object, or
// ErrMalformedResponse for a chunk that is not JSON.
func (st *streamState) readStream() error {
	for {
		data, err := st.sse.next()
		if err == io.EOF {
			if st.asm.sawFinish || st.asm.complete() {
				return nil
			}
			return ErrStreamInterrupted
		}
		if err != nil {
			return err
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			st.asm.done = true
			return nil
		}
		if err := st.scan.decodeChunk(data, &st.view); err != nil {
			return err
		}
		if err := st.asm.apply(&st.view); err != nil {
			return err
		}
	}
}
