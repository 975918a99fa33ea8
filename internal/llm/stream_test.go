package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
		err  error // final error after the events (io.EOF when clean)
	}{
		{"one event", "data: {\"a\":1}\n\n", []string{`{"a":1}`}, io.EOF},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}, io.EOF},
		{"no space after colon", "data:x\n\n", []string{"x"}, io.EOF},
		{"only one space stripped", "data:  x\n\n", []string{" x"}, io.EOF},
		{"multi-line data joined", "data: a\ndata: b\ndata:\n\n", []string{"a\nb\n"}, io.EOF},
		{"comments and other fields ignored", ": keep-alive\nevent: message\nid: 7\nretry: 100\ndata: x\n\n: bye\n\n", []string{"x"}, io.EOF},
		{"field without colon", "data\n\n", []string{""}, io.EOF},
		{"unknown field", "foo: bar\n\n", nil, io.EOF},
		{"blank lines between", "\n\n\ndata: x\n\n\n\n", []string{"x"}, io.EOF},
		{"last event without blank line", "data: x\n\ndata: y\n", []string{"x", "y"}, io.EOF},
		{"last line without newline", "data: x\n\ndata: y", []string{"x", "y"}, io.EOF},
		{"empty", "", nil, io.EOF},
		{"line at limit", "data: " + strings.Repeat("a", 26) + "\n\n", []string{strings.Repeat("a", 26)}, io.EOF},
		{"line over limit", "data: " + strings.Repeat("a", 27) + "\n\n", nil, &LineTooLongError{}},
		{"long line after events", "data: ok\n\n" + strings.Repeat("b", 100), []string{"ok"}, &LineTooLongError{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, reader := range []func(string) io.Reader{
				func(s string) io.Reader { return strings.NewReader(s) },
				func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
			} {
				var s sseReader
				s.reset(bufio.NewReaderSize(reader(tc.in), 16), 32)
				var got []string
				var err error
				for {
					var data []byte
					data, err = s.next()
					if err != nil {
						break
					}
					got = append(got, string(data))
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("events = %q, want %q", got, tc.want)
				}
				var lt *LineTooLongError
				if _, wantLong := tc.err.(*LineTooLongError); wantLong {
					if !errors.As(err, &lt) || lt.Limit != 32 || lt.Observed <= 32 {
						t.Errorf("err = %v, want LineTooLongError{Limit: 32}", err)
					}
				} else if err != tc.err {
					t.Errorf("err = %v, want %v", err, tc.err)
				}
			}
		})
	}
}

func TestLineTooLongErrorNamesLimitAndObserved(t *testing.T) {
	e := &LineTooLongError{Limit: MaxSSELineBytes, Observed: MaxSSELineBytes + 10}
	msg := e.Error()
	if !strings.Contains(msg, fmt.Sprint(MaxSSELineBytes)) || !strings.Contains(msg, fmt.Sprint(MaxSSELineBytes+10)) {
		t.Errorf("message %q", msg)
	}
}

// runStream feeds a raw SSE body through the stream parser.
func runStream(t testing.TB, body string, maxLine int) (*streamState, error) {
	t.Helper()
	st := getStreamState(strings.NewReader(body), maxLine, nil, false)
	return st, st.readStream()
}

func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: ")
		b.WriteString(c)
		b.WriteString("\n\n")
	}
	return b.String()
}

func TestReadStream(t *testing.T) {
	type call struct{ ID, Name, Args string }
	for _, tc := range []struct {
		name    string
		body    string
		content string
		calls   []call
		finish  string
		usage   Usage
		err     error
	}{
		{
			name: "content with unknown fields, null content, no [DONE] after finish",
			body: sse(
				`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","future":{"nested":[1,{"deep":true}]},"choices":[{"index":0,"delta":{"role":"assistant","content":null,"audio":null},"logprobs":null,"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"content":"Hi"},"extra":1}]}`,
				`{"choices":[{"index":0,"delta":{"content":" there"}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			),
			content: "Hi there", finish: "stop",
		},
		{
			name: "reasoning fields never reach content",
			body: sse(
				`{"choices":[{"index":0,"delta":{"reasoning_content":"secret1"}}]}`,
				`{"choices":[{"index":0,"delta":{"reasoning":"secret2","content":"A"}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"B"},"finish_reason":"stop"}]}`,
				`[DONE]`),
			content: "AB", finish: "stop",
		},
		{
			name: "several tool calls, args over many chunks, interleaved",
			body: sse(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"write","arguments":"{\"x\""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":64}}}`,
				`[DONE]`),
			calls:  []call{{"call_a", "read", `{"path":"a"}`}, {"call_b", "write", `{"x":1}`}},
			finish: "tool_calls", usage: Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 64},
		},
		{
			name: "calls output in index order",
			body: sse(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"c2","function":{"name":"two","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","function":{"name":"zero","arguments":"{}"}},{"index":1,"id":"c1","function":{"name":"one","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			calls:  []call{{"c0", "zero", "{}"}, {"c1", "one", "{}"}, {"c2", "two", "{}"}},
			finish: "tool_calls",
		},
		{
			name: "missing index: whole calls, then continuation",
			body: sse(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"n\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			calls:  []call{{"a", "f", `{"n":1}`}, {"b", "g", "{}"}},
			finish: "tool_calls",
		},
		{
			name: "repeated id and name are not duplicated, missing id left empty, empty args become {}",
			body: sse(
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"  "}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"x","function":{"name":"g"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"x","function":{"name":"g","arguments":"{\"k\":2}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":5}]}}]}`,
				`{"choices":[{"index":0,"finish_reason":"tool_calls"}]}`),
			calls:  []call{{"", "f", "{}"}, {"x", "g", `{"k":2}`}},
			finish: "tool_calls",
		},
		{
			name: "other choices ignored",
			body: sse(
				`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
				`{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"stop"}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`),
			content: "mine", finish: "length",
		},
		{
			name:    "deepseek cache hits",
			body:    sse(`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`, `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_cache_hit_tokens":6}}`, `[DONE]`),
			content: "x", finish: "stop", usage: Usage{PromptTokens: 10, CompletionTokens: 1, CachedTokens: 6},
		},
		{
			name:    "refusal is shown as content",
			body:    sse(`{"choices":[{"index":0,"delta":{"refusal":"I can't"},"finish_reason":"stop"}]}`),
			content: "I can't", finish: "stop",
		},
		{
			name:    "keep-alive comments and empty data",
			body:    ": ping\n\n" + "data:\n\n" + "data:   \n\n" + sse(`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`),
			content: "x", finish: "stop",
		},
		{
			name:    "multi-line data is one chunk",
			body:    "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"joined\"},\"finish_reason\":\"stop\"}]}\n\n",
			content: "joined", finish: "stop",
		},
		{
			name:    "[DONE] without finish_reason is complete",
			body:    sse(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`, `[DONE]`, `garbage after done`),
			content: "x",
		},
		{
			name:    "clean end without finish_reason or [DONE] after an answer",
			body:    sse(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`),
			content: "x",
		},
		{
			name:  "clean end without finish_reason after a whole tool call",
			body:  sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`),
			calls: []call{{"c", "f", `{"a":1}`}},
		},
		{
			name: "end inside a tool call's arguments",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`),
			err:  ErrStreamInterrupted,
		},
		{
			name: "end after only a role chunk",
			body: sse(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`),
			err:  ErrStreamInterrupted,
		},
		{
			name: "empty body",
			body: "",
			err:  ErrStreamInterrupted,
		},
		{
			name: "malformed chunk",
			body: sse(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`, `{"choices":[`),
			err:  ErrMalformedResponse,
		},
		{
			name: "error object in stream",
			body: sse(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`, `{"error":{"message":"Overloaded","type":"overloaded_error"}}`),
			err:  &APIError{},
		},
		{
			name: "line too long",
			body: sse(`{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 300) + `"}}]}`),
			err:  &LineTooLongError{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := runStream(t, tc.body, 256)
			defer putStreamState(st)
			switch want := tc.err.(type) {
			case nil:
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			case *APIError:
				var ae *APIError
				if !errors.As(err, &ae) || !ae.InStream {
					t.Fatalf("err = %v, want in-stream APIError", err)
				}
				return
			case *LineTooLongError:
				var le *LineTooLongError
				if !errors.As(err, &le) || le.Limit != 256 {
					t.Fatalf("err = %v, want LineTooLongError", err)
				}
				return
			default:
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
				return
			}
			m := st.asm.message()
			if m.Content != tc.content || m.Role != RoleAssistant {
				t.Errorf("content = %q, want %q", m.Content, tc.content)
			}
			var got []call
			for _, c := range m.ToolCalls {
				if c.Type != "function" {
					t.Errorf("call type %q", c.Type)
				}
				got = append(got, call{c.ID, c.Function.Name, c.Function.Arguments})
			}
			if !reflect.DeepEqual(got, tc.calls) {
				t.Errorf("calls = %q, want %q", got, tc.calls)
			}
			if st.asm.finish != tc.finish || st.asm.usage != tc.usage {
				t.Errorf("finish %q usage %+v, want %q %+v", st.asm.finish, st.asm.usage, tc.finish, tc.usage)
			}
		})
	}
}

func TestStreamStateReuseDoesNotLeak(t *testing.T) {
	// A pooled state must not carry calls, content or usage into the next
	// stream.
	first := sse(`{"model":"m1","choices":[{"index":0,"delta":{"content":"one","tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5}}`)
	second := sse(`{"choices":[{"index":0,"delta":{"content":"two"},"finish_reason":"stop"}]}`)
	for i := 0; i < 3; i++ {
		st, err := runStream(t, first, MaxSSELineBytes)
		if err != nil {
			t.Fatal(err)
		}
		putStreamState(st)
		st, err = runStream(t, second, MaxSSELineBytes)
		if err != nil {
			t.Fatal(err)
		}
		m := st.asm.message()
		if m.Content != "two" || len(m.ToolCalls) != 0 || st.asm.usage != (Usage{}) || st.asm.model != "" || st.asm.finish != "stop" {
			t.Fatalf("state leaked: %+v model %q usage %+v", m, st.asm.model, st.asm.usage)
		}
		putStreamState(st)
	}
}

func TestBodyReaderLimit(t *testing.T) {
	for _, tc := range []struct {
		size, limit int64
		tooLarge    bool
	}{
		{10, 10, false}, {11, 10, true}, {0, 10, false}, {1000, 10, true},
	} {
		b := &bodyReader{r: strings.NewReader(strings.Repeat("x", int(tc.size))), limit: tc.limit}
		data, err := io.ReadAll(b)
		var e *ResponseTooLargeError
		if tc.tooLarge {
			if !errors.As(err, &e) || e.Limit != tc.limit || e.Observed <= tc.limit {
				t.Errorf("size %d: err = %v", tc.size, err)
			}
			if int64(len(data)) > tc.limit {
				t.Errorf("size %d: read %d bytes past the limit", tc.size, len(data))
			}
		} else if err != nil || int64(len(data)) != tc.size {
			t.Errorf("size %d: %d bytes, err %v", tc.size, len(data), err)
		}
	}
}

// FuzzReadStream feeds arbitrary bytes through the SSE reader and the
// chunk assembler with small limits: it must never panic, never return an
// untyped error, and never hold more than the input can explain.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte(sse(
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`, `[DONE]`)))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\"},{\"id\":\"b\"},{}]}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(": c\r\nevent: x\r\ndata: {\"error\":{\"message\":\"m\",\"code\":500}}\r\n\r\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\u00e9\xff\"},\"finish_reason\":\"stop\"}]}"))
	f.Add([]byte("data: " + strings.Repeat("z", 200) + "\n\n"))
	f.Add([]byte("data: {}\ndata: {}\n\n"))
	f.Add([]byte{})
	addCorpusSeeds(f, ".sse")
	const maxLine, limit = 128, 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		br := &bodyReader{r: strings.NewReader(string(data)), limit: limit}
		st := getStreamState(br, maxLine, func(string) {}, false)
		defer putStreamState(st)
		err := st.readStream()
		var (
			le *LineTooLongError
			re *ResponseTooLargeError
			ae *APIError
		)
		switch {
		case err == nil:
		case errors.As(err, &le):
			if le.Limit != maxLine || le.Observed <= maxLine {
				t.Fatalf("bad LineTooLongError %+v", le)
			}
		case errors.As(err, &re), errors.As(err, &ae),
			errors.Is(err, ErrMalformedResponse), errors.Is(err, ErrStreamInterrupted):
		default:
			t.Fatalf("untyped error %v", err)
		}
		if len(data) > limit && err == nil && !st.asm.done {
			t.Fatalf("read %d bytes past the %d limit without error", len(data), limit)
		}
		st.asm.finishContent()
		m := st.asm.message()
		checkEncodable(t, &m)
		// Unescaping never grows a string by more than 3× (one invalid
		// byte becomes U+FFFD); each call adds at most a generated id and "{}".
		size := len(m.Content)
		for _, c := range m.ToolCalls {
			size += len(c.Function.Arguments) + len(c.ID) + len(c.Function.Name) - len("call_0000000000") - 2
		}
		if size > 3*len(data) {
			t.Fatalf("assembled %d bytes from %d input bytes", size, len(data))
		}
	})
}

func TestTooManyToolCalls(t *testing.T) {
	var chunks []string
	for i := 0; i <= MaxToolCalls; i++ {
		chunks = append(chunks, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"c%d","function":{"name":"f","arguments":"{}"}}]}}]}`, i, i))
	}
	st, err := runStream(t, sse(chunks...), MaxSSELineBytes)
	defer putStreamState(st)
	if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), fmt.Sprint(MaxToolCalls)) {
		t.Fatalf("err = %v, want ErrMalformedResponse naming the limit", err)
	}
	// Exactly at the limit is fine.
	st2, err := runStream(t, sse(append(chunks[:MaxToolCalls], `{"choices":[{"index":0,"finish_reason":"tool_calls"}]}`)...), MaxSSELineBytes)
	defer putStreamState(st2)
	if err != nil || len(st2.asm.message().ToolCalls) != MaxToolCalls {
		t.Fatalf("err = %v", err)
	}
}

// FuzzDecodeBody feeds arbitrary bytes to the non-streamed reply parser:
// no panic, only typed errors, bounded tool calls, defaults applied.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"a"}],"tool_calls":[{"function":{"name":"g","arguments":{"x":1}}},{}]}}]}`,
		`{"error":{"message":"m","type":"server_error","code":503}}`,
		`{"choices":[]}`, `null`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	addCorpusSeeds(f, ".json")
	f.Fuzz(func(t *testing.T, data []byte) {
		res, _, err := decodeBody(data, false)
		if err != nil {
			var ae *APIError
			if !errors.As(err, &ae) && !errors.Is(err, ErrMalformedResponse) && !errors.Is(err, ErrOutputTruncated) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(res.Message.ToolCalls) > MaxToolCalls || res.Message.Role != RoleAssistant {
			t.Fatalf("message %+v", res.Message)
		}
		for _, c := range res.Message.ToolCalls {
			if c.Type == "" || c.Function.Arguments == "" {
				t.Fatalf("defaults not applied: %+v", c)
			}
		}
		checkEncodable(t, &res.Message)
	})
}

// addCorpusSeeds adds the provider corpus bodies ending in ext as seeds.
func addCorpusSeeds(f *testing.F, ext string) {
	files, _ := filepath.Glob("testdata/providers/*/*" + ext)
	for _, name := range files {
		if strings.HasSuffix(name, ".case.json") {
			continue
		}
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
}

// checkEncodable: whatever was assembled can be sent back: its Extra
// members are JSON objects and the message encodes as valid JSON that
// decodes to the same message.
func checkEncodable(t *testing.T, m *Message) {
	t.Helper()
	for _, e := range append([]json.RawMessage{m.Extra}, extrasOf(m)...) {
		if len(e) > 0 && (!json.Valid(e) || e[0] != '{') {
			t.Fatalf("Extra %q is not a JSON object", e)
		}
	}
	b, err := appendMessage(nil, m)
	if err != nil || !json.Valid(b) {
		t.Fatalf("message does not encode: %v: %q", err, b)
	}
	// The session form (agent.Message.MarshalJSON) is the request form.
	if mj, err := m.MarshalJSON(); err != nil || !bytes.Equal(mj, b) {
		t.Fatalf("MarshalJSON differs from the request encoder (%v):\n%s\n%s", err, mj, b)
	}
	var back Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("encoded message does not decode: %v: %s", err, b)
	}
	again, _ := appendMessage(nil, &back)
	if !bytes.Equal(canonical(t, b), canonical(t, again)) {
		t.Fatalf("encode/decode is not stable:\n%s\n%s", b, again)
	}
}

func extrasOf(m *Message) []json.RawMessage {
	var out []json.RawMessage
	for _, c := range m.ToolCalls {
		out = append(out, c.Extra)
	}
	return out
}

func canonical(t *testing.T, b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

// A leading <think> block is reasoning: never streamed as a delta, never
// in the answer; KeepThinkTags leaves it; a block that never closes is all
// reasoning; text that only looks like the start of a tag is delivered.
func TestThinkTags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keep       bool
		pieces     []string
		content    string
		reasoning  string
		deliveries string
	}{
		{"split tag", false, []string{"  <th", "ink>plan", " more</thi", "nk>\n\nAnswer", " done"}, "Answer done", "plan more", "Answer done"},
		{"kept", true, []string{"<think>plan</think>Answer"}, "<think>plan</think>Answer", "", "<think>plan</think>Answer"},
		{"unclosed", false, []string{"<think>all of it"}, "", "all of it", ""},
		{"not a tag", false, []string{"<thi", "s is fine"}, "<this is fine", "", "<this is fine"},
		{"short prefix at the end", false, []string{"<th"}, "<th", "", "<th"},
		{"tag later is content", false, []string{"Hi <think>x</think>"}, "Hi <think>x</think>", "", "Hi <think>x</think>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chunks []string
			for _, p := range tc.pieces {
				b, _ := json.Marshal(p)
				chunks = append(chunks, `{"choices":[{"index":0,"delta":{"content":`+string(b)+`}}]}`)
			}
			chunks = append(chunks, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			var got strings.Builder
			st := getStreamState(strings.NewReader(sse(chunks...)), MaxSSELineBytes, func(s string) { got.WriteString(s) }, tc.keep)
			defer putStreamState(st)
			if err := st.readStream(); err != nil {
				t.Fatal(err)
			}
			st.asm.finishContent()
			m := st.asm.message()
			if m.Content != tc.content || string(st.asm.reasoning) != tc.reasoning || got.String() != tc.deliveries {
				t.Fatalf("content %q reasoning %q delivered %q, want %q %q %q", m.Content, st.asm.reasoning, got.String(), tc.content, tc.reasoning, tc.deliveries)
			}
			// The non-streamed path gives the same answer.
			body, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": strings.Join(tc.pieces, "")}}}})
			res, _, err := decodeBody(body, tc.keep)
			if err != nil || res.Message.Content != tc.content || res.Reasoning != tc.reasoning {
				t.Fatalf("decodeBody: %+v %v", res, err)
			}
		})
	}
}

// Calls without ids keep them empty in both paths, so the caller assigns
// ids unique across the run (the agent's it<iteration>-call<n>); the
// client never invents call_0 again on every reply.
func TestMissingIDsStayEmpty(t *testing.T) {
	body := `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"a","arguments":"{}"}},{"function":{"name":"b","arguments":""}}]}}]}`
	res, _, err := decodeBody([]byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Message.ToolCalls) != 2 || res.Message.ToolCalls[0].ID != "" || res.Message.ToolCalls[1].ID != "" || res.Message.ToolCalls[1].Function.Arguments != "{}" {
		t.Fatalf("calls %+v", res.Message.ToolCalls)
	}
}
