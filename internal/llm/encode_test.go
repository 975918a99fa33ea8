package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/odekrun/odek/internal/toolschema"
)

// referenceBody is the request body as encoding/json renders the whole
// request in one go.
func referenceBody(t *testing.T, req *Request, stream bool) any {
	t.Helper()
	// Plain mirrors of Message and ToolCall, so that the reference does not
	// use the encoder under test; Extra members are merged by map.
	type refCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function FunctionCall `json:"function"`
	}
	type refMsg struct {
		Role       string    `json:"role"`
		Content    string    `json:"content"`
		ToolCalls  []refCall `json:"tool_calls,omitempty"`
		ToolCallID string    `json:"tool_call_id,omitempty"`
		Name       string    `json:"name,omitempty"`
	}
	merge := func(v any, extra json.RawMessage) map[string]any {
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		var e map[string]any
		json.Unmarshal(extra, &e)
		for k, x := range e {
			if _, known := m[k]; !known && k != "tool_calls" && k != "tool_call_id" && k != "name" {
				m[k] = x
			}
		}
		return m
	}
	type wire struct {
		Model         string          `json:"model"`
		Messages      []any           `json:"messages"`
		Tools         []ToolSpec      `json:"tools,omitempty"`
		Temperature   *float64        `json:"temperature,omitempty"`
		MaxTokens     int             `json:"max_tokens,omitempty"`
		Stream        bool            `json:"stream,omitempty"`
		StreamOptions *wireStreamOpts `json:"stream_options,omitempty"`
	}
	w := wire{Model: req.Model, Tools: req.Tools, Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	for _, m := range req.Messages {
		rm := refMsg{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		mm := merge(rm, m.Extra)
		var calls []any
		for _, c := range m.ToolCalls {
			if c.Type == "" {
				c.Type = "function"
			}
			calls = append(calls, merge(refCall{c.ID, c.Type, c.Function}, c.Extra))
		}
		if calls != nil {
			mm["tool_calls"] = calls
		}
		w.Messages = append(w.Messages, mm)
	}
	w.Tools = append([]ToolSpec(nil), w.Tools...)
	for i := range w.Tools {
		if w.Tools[i].Type == "" {
			w.Tools[i].Type = "function"
		}
		p, _, err := toolschema.Normalize(w.Tools[i].Function.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		w.Tools[i].Function.Parameters = p
	}
	if stream {
		w.Stream, w.StreamOptions = true, &wireStreamOpts{IncludeUsage: true}
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func randomRequest(r *rand.Rand) Request {
	pick := func(opts ...string) string { return opts[r.IntN(len(opts))] }
	text := func() string {
		n := r.IntN(4)
		return strings.Repeat(pick("", "a", "é ✓", `"quoted" \ back`, "<html>&amp;", "\t\n\x01", "\xff"), 1+r.IntN(3)) +
			strings.Repeat("long content ", []int{0, 10, 60, 200}[n])
	}
	req := Request{Model: pick("m", "gpt-4o")}
	for i := 0; i < 1+r.IntN(8); i++ {
		m := Message{Role: pick(RoleSystem, RoleUser, RoleAssistant, RoleTool), Content: text(), Name: pick("", "n"), ToolCallID: pick("", "c1")}
		for j := 0; j < r.IntN(3); j++ {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: pick("c1", "c2"), Type: pick("", "function"),
				Function: FunctionCall{Name: pick("f", "g"), Arguments: pick(`{}`, `{"a":"<b>"}`, ``)},
				Extra:    json.RawMessage(pick(``, `{"extra_content":{"google":{"thought_signature":"c2ln"}}}`, ` { "id" : "shadowed", "x" : [ 1 , "a b" ] } `))})
		}
		m.Extra = json.RawMessage(pick(``, ``, `{"reasoning_content":"think \"hard\" ✓"}`, `{"role":"shadowed","reasoning_details":[{"type":"reasoning.text","text":"t"}]}`))
		req.Messages = append(req.Messages, m)
	}
	if r.IntN(2) == 0 {
		req.Tools = []ToolSpec{{Type: pick("", "function"), Function: FunctionSpec{Name: "f", Description: text(),
			Parameters: json.RawMessage(pick(``, `{"type":"object"}`, ` { "type" : "object" } `))}}}
	}
	if r.IntN(2) == 0 {
		temp := 0.5
		req.Temperature = &temp
		req.MaxTokens = r.IntN(100)
	}
	return req
}

func TestEncodeRequestMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var cache msgCache
	for i := 0; i < 500; i++ {
		req := randomRequest(r)
		stream := r.IntN(2) == 0
		want := referenceBody(t, &req, stream)
		// Without cache, with a cold cache, and again with a warm one.
		for pass, c := range []*msgCache{nil, &cache, &cache} {
			body, err := encodeRequest(&req, stream, c, nil, schemaOpts{})
			if err != nil {
				t.Fatal(err)
			}
			var got any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("pass %d: body is not JSON: %v\n%s", pass, err, body)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("pass %d: body differs\n got %s\nwant %v", pass, body, want)
			}
		}
	}
}

func TestEncodeRequestDoesNotModifyRequest(t *testing.T) {
	req := Request{Model: "m", Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Function: FunctionCall{Name: "f"}}}}},
		Tools: []ToolSpec{{Function: FunctionSpec{Name: "f"}}}}
	if _, err := encodeRequest(&req, true, nil, nil, schemaOpts{}); err != nil {
		t.Fatal(err)
	}
	if req.Messages[0].ToolCalls[0].Type != "" || req.Tools[0].Type != "" {
		t.Errorf("request modified: %+v", req)
	}
}

func TestMessageCacheHitsAndInvalidation(t *testing.T) {
	var cache msgCache
	big := strings.Repeat("x", cacheMinContent)
	msgs := []Message{{Role: RoleUser, Content: big}, {Role: RoleTool, ToolCallID: "a", Content: big}}
	req := Request{Model: "m", Messages: msgs[:1]}
	encodeRequest(&req, false, &cache, nil, schemaOpts{})
	if got := cache.lookup(msgs[:1]); got == nil || got[0] == nil {
		t.Fatal("no hit after encoding")
	}
	// Same content string, different other fields: not a hit.
	if got := cache.lookup(msgs[1:]); got != nil && got[0] != nil {
		t.Fatalf("hit for a different message: %s", got[0])
	}
	// Equal content in a different string: not found by identity, and
	// still encoded right.
	other := []Message{{Role: RoleUser, Content: strings.Clone(big)}}
	if got := cache.lookup(other); got != nil && got[0] != nil {
		t.Fatal("hit by content for a different string")
	}
	// Small messages are never cached.
	small := []Message{{Role: RoleUser, Content: "hi"}}
	encodeRequest(&Request{Model: "m", Messages: small}, false, &cache, nil, schemaOpts{})
	if got := cache.lookup(small); got != nil && got[0] != nil {
		t.Fatal("small message cached")
	}
}

func TestMessageCacheIsBounded(t *testing.T) {
	var cache msgCache
	content := strings.Repeat("y", 1<<20)
	for i := 0; i < 3*cacheGenerationBytes>>20; i++ {
		c := strings.Clone(content)
		encodeRequest(&Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: c}}}, false, &cache, nil, schemaOpts{})
	}
	total := 0
	for _, g := range []map[msgKey]*msgEntry{cache.cur, cache.old} {
		for _, e := range g {
			total += len(e.enc)
		}
	}
	if total > 2*cacheGenerationBytes || cache.curBytes > cacheGenerationBytes {
		t.Errorf("cache holds %d bytes (cur %d), limit 2×%d", total, cache.curBytes, cacheGenerationBytes)
	}
}

// TestSameMessageCoversAllFields fails when Message or ToolCall gain a
// field that sameMessage does not compare (a stale cached encoding would
// then be sent).
func TestSameMessageCoversAllFields(t *testing.T) {
	if n := reflect.TypeFor[Message]().NumField(); n != 7 {
		t.Errorf("Message has %d fields; update sameMessage and this test", n)
	}
	if n := reflect.TypeFor[ToolCall]().NumField(); n != 4 {
		t.Errorf("ToolCall has %d fields; update sameMessage and this test", n)
	}
	base := Message{Role: "r", Content: "c", ToolCallID: "i", Name: "n", ToolCalls: []ToolCall{{ID: "a", Type: "t", Function: FunctionCall{Name: "f", Arguments: "x"}}}}
	for _, mut := range []func(*Message){
		func(m *Message) { m.Role = "R" },
		func(m *Message) { m.Content = "C" },
		func(m *Message) { m.ToolCallID = "I" },
		func(m *Message) { m.Name = "N" },
		func(m *Message) { m.ToolCalls = nil },
		func(m *Message) { m.Extra = json.RawMessage(`{"reasoning_content":"r"}`) },
		func(m *Message) {
			m.ToolCalls = []ToolCall{{ID: "a", Type: "t", Function: FunctionCall{Name: "f", Arguments: "x"}, Extra: json.RawMessage(`{"e":1}`)}}
		},
		func(m *Message) {
			m.ToolCalls = []ToolCall{{ID: "b", Type: "t", Function: FunctionCall{Name: "f", Arguments: "x"}}}
		},
		func(m *Message) {
			m.ToolCalls = []ToolCall{{ID: "a", Type: "t", Function: FunctionCall{Name: "f", Arguments: "y"}}}
		},
	} {
		m := base
		mut(&m)
		if sameMessage(&base, &m) {
			t.Errorf("sameMessage(%+v, %+v) = true", base, m)
		}
	}
	c := base
	c.ToolCalls = append([]ToolCall(nil), base.ToolCalls...)
	if !sameMessage(&base, &c) {
		t.Error("equal messages reported different")
	}
}

// The non-message part of the body is cached per client; a hit must never
// be stale, whatever the caller changed in place.
func TestRestCacheNeverStale(t *testing.T) {
	var cache msgCache
	tools := []ToolSpec{{Type: "function", Function: FunctionSpec{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	req := Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}, Tools: tools}
	fresh := func(r Request, stream bool) string {
		b, err := encodeRequest(&r, stream, nil, nil, schemaOpts{})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cached := func(r Request, stream bool) string {
		b, err := encodeRequest(&r, stream, &cache, nil, schemaOpts{})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := cached(req, true), cached(req, true); a != b || a != fresh(req, true) {
		t.Fatalf("cached bodies differ:\n%s\n%s", a, b)
	}
	tools[0].Function.Parameters[2] = 'X' // same slice, other bytes: {"Xype":"object"}
	if got := cached(req, true); got != fresh(req, true) || !strings.Contains(got, "Xype") {
		t.Fatalf("stale after an in-place change of the parameters:\n%s", got)
	}
	tools[0].Function.Name = "b"
	if got := cached(req, true); !strings.Contains(got, `"name":"b"`) {
		t.Fatalf("stale after a rename:\n%s", got)
	}
	temp := 0.5
	req.Temperature = &temp
	if got := cached(req, true); !strings.Contains(got, `"temperature":0.5`) {
		t.Fatalf("stale after setting temperature:\n%s", got)
	}
	temp = 0.7
	if got := cached(req, true); !strings.Contains(got, `"temperature":0.7`) {
		t.Fatalf("stale after changing temperature in place:\n%s", got)
	}
	if got := cached(req, false); strings.Contains(got, `"stream"`) || got != fresh(req, false) {
		t.Fatalf("stream flag not part of the key:\n%s", got)
	}
	req.Model = "m2"
	if got := cached(req, false); !strings.Contains(got, `"model":"m2"`) {
		t.Fatalf("stale after a model change:\n%s", got)
	}
	bad := req
	bad.Tools = []ToolSpec{{Function: FunctionSpec{Name: "x", Parameters: json.RawMessage(`{`)}}}
	if _, err := encodeRequest(&bad, true, &cache, nil, schemaOpts{}); err == nil {
		t.Fatal("invalid parameters accepted through the cache")
	}
}

// The body is sent as segments that share the cached encodings; read
// with any buffer size (or WriteTo) it is exactly the joined body.
func TestRequestBodySegments(t *testing.T) {
	var cache msgCache
	big := strings.Repeat("tool output line\n", 100)
	req := Request{Model: "m", Messages: []Message{{Role: RoleSystem, Content: "s"}, {Role: RoleUser, Content: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Function: FunctionCall{Name: "f", Arguments: "{}"}}}},
		{Role: RoleTool, ToolCallID: "c1", Content: big}, {Role: RoleUser, Content: "more"}}}
	want, err := encodeRequest(&req, true, nil, nil, schemaOpts{})
	if err != nil {
		t.Fatal(err)
	}
	encodeBody(&req, true, &cache, nil, schemaOpts{}) // warm the cache
	segs, _, err := encodeBody(&req, true, &cache, nil, schemaOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("%d segments: the cached tool result should be one of its own", len(segs))
	}
	size := 0
	for _, s := range segs {
		size += len(s)
	}
	for _, chunk := range []int{1, 7, 4096, 1 << 20} {
		rb := &requestBody{segs: segs, size: size}
		var got []byte
		p := make([]byte, chunk)
		for {
			n, err := rb.Read(p)
			got = append(got, p[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil || n == 0 {
				t.Fatalf("Read: %d, %v", n, err)
			}
		}
		if string(got) != string(want) {
			t.Fatalf("chunk %d: body differs", chunk)
		}
	}
	var w bytes.Buffer
	rb := &requestBody{segs: segs, size: size}
	if n, err := rb.WriteTo(&w); err != nil || int(n) != len(want) || w.String() != string(want) {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}
	again, _ := rb.again()
	b, _ := io.ReadAll(again)
	if string(b) != string(want) {
		t.Fatal("again() differs")
	}
}

// TestMessageJSONMatchesClient: the JSON form session stores write
// (agent.Message.MarshalJSON) is byte-identical to the request encoder's,
// escapes, provider metadata and all, and decodes back to the message.
func TestMessageJSONMatchesClient(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "plain"},
		{Role: RoleUser, Content: "<html> & \"quotes\" \\ \n\t\r\b\f \x01 \u2028\u2029 é 日本 \xff bad"},
		{Role: RoleAssistant, Content: "", Extra: json.RawMessage(`{"reasoning_content":"thinking…","z":[1, 2, {"a" : null}],"Content":"shadowed"}`),
			ToolCalls: []ToolCall{
				{ID: "c1", Function: FunctionCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}},
				{ID: "c2", Type: "function", Function: FunctionCall{Name: "x", Arguments: "not json"},
					Extra: json.RawMessage(` {"extra_content":{"google":{"thought_signature":"c2ln"}}, "id":"dup"} `)},
			}},
		{Role: RoleTool, ToolCallID: "c1", Content: "result", Name: "read_file"},
	}
	for i := range msgs {
		m := &msgs[i]
		want, err := appendMessage(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("message %d:\n MarshalJSON %s\n encoder     %s", i, got, want)
		}
		var back Message
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := appendMessage(nil, &back)
		if !bytes.Equal(again, want) && m.Extra == nil && !strings.Contains(m.Content, "\xff") {
			t.Errorf("message %d does not survive a round trip:\n%s\n%s", i, again, want)
		}
	}
	if _, err := (Message{Extra: json.RawMessage(`[1]`)}).MarshalJSON(); err == nil {
		t.Error("an Extra that is not an object was encoded")
	}
}
