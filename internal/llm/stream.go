package llm

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"time"
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
}

// assembler turns chunks into a Response. The rules for tool-call deltas:
//
//   - Deltas are keyed by "index"; a new index starts a new call. Calls are
//     output in ascending index order whatever order they arrived in; gaps
//     in the indices are not filled.
//   - id, type and name take the first non-empty value seen for the call
//     (providers send them in the first delta only; some repeat them,
//     which is then harmless). arguments fragments are concatenated.
//   - A delta without an integer index continues the most recent call,
//     unless it carries an id different from that call's id (or there is no
//     call yet): then it starts a new call with the index after the largest
//     seen. This covers providers that omit index and send each call whole.
//   - On output an empty id stays empty (the caller owns synthetic ids), an empty type
//     "function", and empty arguments "{}" (what a call without parameters
//     means; several providers send ""). A call with no id, name or
//     arguments at all is dropped.
//
// Only the choice with index 0 is used; content of other choices (n > 1)
// is ignored. reasoning_content / reasoning never reach the content.
type assembler struct {
	content   []byte
	calls     []callAcc
	finish    string
	model     string
	usage     Usage
	sawFinish bool
	done      bool // [DONE] seen

	onDelta    func(string)
	delivered  bool      // onDelta was called at least once
	firstDelta time.Time // first content or tool-call delta; zero until then
	scratch    []byte
}

func (a *assembler) reset(onDelta func(string)) {
	for i := range a.calls {
		a.calls[i] = callAcc{args: a.calls[i].args[:0]}
	}
	*a = assembler{
		content: a.content[:0],
		calls:   a.calls[:0],
		scratch: a.scratch[:0],
		onDelta: onDelta,
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
		u := &v.usage
		a.usage.PromptTokens = u.prompt
		a.usage.CompletionTokens = u.completion
		switch {
		case u.hasCached:
			a.usage.CachedTokens = u.cached
		case u.hasCacheH:
			a.usage.CachedTokens = u.cacheHit
		default:
			a.usage.CachedTokens = 0
		}
	}
	if !v.hasChoice {
		return nil
	}
	c := &v.choice
	for _, j := range [2]jstr{c.content, c.refusal} {
		if !j.ok || len(j.raw) == 0 {
			continue
		}
		n := len(a.content)
		a.content = appendStr(a.content, j)
		a.markDelta()
		if a.onDelta != nil && len(a.content) > n {
			a.delivered = true
			a.onDelta(string(a.content[n:]))
		}
	}
	for i := range c.tools {
		a.applyTool(&c.tools[i])
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

func (a *assembler) markDelta() {
	if a.firstDelta.IsZero() {
		a.firstDelta = time.Now()
	}
}

func (a *assembler) applyTool(t *toolDelta) {
	a.markDelta()
	var c *callAcc
	switch {
	case t.hasIndex:
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].index == t.index {
				c = &a.calls[i]
				break
			}
		}
		if c == nil {
			c = a.newCall(t.index)
		}
	case len(a.calls) == 0:
		c = a.newCall(0)
	default:
		c = &a.calls[len(a.calls)-1]
		if t.id.ok && len(t.id.raw) > 0 && c.id != "" && !a.equal(c.id, t.id) {
			top := a.calls[0].index
			for _, k := range a.calls[1:] {
				top = max(top, k.index)
			}
			c = a.newCall(top + 1)
		}
	}
	if c.id == "" && t.id.ok && len(t.id.raw) > 0 {
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
}

func (a *assembler) newCall(index int) *callAcc {
	if len(a.calls) < cap(a.calls) {
		a.calls = a.calls[:len(a.calls)+1]
		c := &a.calls[len(a.calls)-1]
		*c = callAcc{index: index, args: c.args[:0]}
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
	m := Message{Role: RoleAssistant, Content: string(a.content)}
	calls := a.calls
	// Insertion sort by index: calls almost always arrive in order.
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
		if tc.Type == "" {
			tc.Type = "function"
		}
		if len(bytes.TrimSpace(c.args)) == 0 {
			tc.Function.Arguments = "{}"
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return m
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

func getStreamState(r io.Reader, maxLine int, onDelta func(string)) *streamState {
	st := streamPool.Get().(*streamState)
	st.br.Reset(r)
	st.sse.reset(st.br, maxLine)
	st.asm.reset(onDelta)
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
// [DONE] arrived, or at EOF after a finish_reason; ErrStreamInterrupted at
// EOF before one; the read error (body errors are the caller's to
// interpret), a *LineTooLongError, an *APIError from an error object, or
// ErrMalformedResponse for a chunk that is not JSON.
func (st *streamState) readStream() error {
	for {
		data, err := st.sse.next()
		if err == io.EOF {
			if st.asm.sawFinish {
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
