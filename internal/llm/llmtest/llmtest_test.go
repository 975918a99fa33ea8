package llmtest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const streamReq = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`

// events splits an SSE body into its data payloads, checking the framing.
func events(t *testing.T, body string) []string {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("body does not end with a blank line: %q", body[max(0, len(body)-40):])
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
			t.Fatalf("bad event %q", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

type wireChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func TestStreamWireFormat(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{
		Reasoning: "think", Content: "héllo wörld",
		ToolCalls: []llmtest.Call{{Name: "a", Arguments: `{"k":"v"}`}, {ID: "mine", Name: "b", Arguments: `{}`}},
		Usage:     &llm.Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 3},
		ChunkSize: 4,
	})
	resp := post(t, srv.URL, streamReq)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || resp.StatusCode != 200 {
		t.Fatalf("status %d content type %q", resp.StatusCode, ct)
	}
	b, _ := io.ReadAll(resp.Body)
	evs := events(t, string(b))
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("last event %q", evs[len(evs)-1])
	}
	var content, reasoning strings.Builder
	args := map[int]string{}
	argChunks := map[int]int{}
	ids, names := map[int]string{}, map[int]string{}
	var finish string
	var usage map[string]any
	for i, ev := range evs[:len(evs)-1] {
		var c wireChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if c.Object != "chat.completion.chunk" || c.ID == "" || c.Model != "m" {
			t.Errorf("chunk header %+v", c)
		}
		if i == len(evs)-2 {
			if len(c.Choices) != 0 || json.Unmarshal(c.Usage, &usage) != nil || usage == nil {
				t.Fatalf("last chunk is not usage-only: %s", ev)
			}
			continue
		}
		if string(c.Usage) != "null" {
			t.Errorf("chunk %d usage = %s, want null", i, c.Usage)
		}
		if len(c.Choices) != 1 {
			t.Fatalf("chunk %d has %d choices", i, len(c.Choices))
		}
		ch := c.Choices[0]
		if (i == 0) != (ch.Delta.Role == "assistant") {
			t.Errorf("chunk %d role %q", i, ch.Delta.Role)
		}
		if ch.Delta.Content != nil {
			content.WriteString(*ch.Delta.Content)
		}
		if ch.Delta.ReasoningContent != nil {
			if content.Len() > 0 {
				t.Error("reasoning after content")
			}
			reasoning.WriteString(*ch.Delta.ReasoningContent)
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.ID != "" {
				ids[tc.Index], names[tc.Index] = tc.ID, tc.Function.Name
				if tc.Type != "function" {
					t.Errorf("type %q", tc.Type)
				}
			}
			if tc.Function.Arguments != "" {
				args[tc.Index] += tc.Function.Arguments
				argChunks[tc.Index]++
			}
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
	}
	if content.String() != "héllo wörld" || reasoning.String() != "think" || finish != "tool_calls" {
		t.Errorf("content %q reasoning %q finish %q", content.String(), reasoning.String(), finish)
	}
	if args[0] != `{"k":"v"}` || args[1] != `{}` || argChunks[0] < 2 || argChunks[1] < 2 {
		t.Errorf("args %v in %v chunks, want each split over 2+", args, argChunks)
	}
	if ids[1] != "mine" || !strings.HasPrefix(ids[0], "call_") || names[0] != "a" || names[1] != "b" {
		t.Errorf("ids %v names %v", ids, names)
	}
	details, _ := usage["prompt_tokens_details"].(map[string]any)
	if usage["prompt_tokens"] != 10.0 || usage["completion_tokens"] != 5.0 || details["cached_tokens"] != 3.0 {
		t.Errorf("usage = %v", usage)
	}
}

func TestStreamWithoutIncludeUsage(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("x"))
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	b, _ := io.ReadAll(resp.Body)
	for _, ev := range events(t, string(b)) {
		if strings.Contains(ev, `"usage"`) {
			t.Errorf("usage sent without include_usage: %s", ev)
		}
	}
}

func TestNonStreamWireFormat(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Reasoning: "r", ToolCalls: []llmtest.Call{{Name: "f", Arguments: `{"a":1}`}}})
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	var body struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content          *string        `json:"content"`
				ReasoningContent string         `json:"reasoning_content"`
				ToolCalls        []llm.ToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	m := body.Choices[0].Message
	if body.Object != "chat.completion" || m.Content != nil || m.ReasoningContent != "r" ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"a":1}` || body.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("body = %+v", body)
	}
	if body.Usage["prompt_tokens"] == nil {
		t.Errorf("usage = %v", body.Usage)
	}
}

func TestRequestValidation(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not json", `{`, "could not parse"},
		{"unknown param", `{"model":"m","messages":[{"role":"user","content":"x"}],"bogus":1}`, "Unrecognized request argument supplied: bogus"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, "model"},
		{"no messages", `{"model":"m","messages":[]}`, "too short"},
		{"stream_options without stream", `{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, "stream_options"},
		{"tool_choice without tools", `{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`, "tool_choice"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "robot"},
		{"bad tool type", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"fn","function":{"name":"a"}}]}`, "function"},
		{"bad tool name", `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`, "pattern"},
		{"tool without call", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, "must be a response"},
		{"unanswered call", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"y"}]}`, "c1"},
		{"unanswered call at end", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, "c2"},
		{"call without type", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}]}`, "type"},
		{"content object", `{"model":"m","messages":[{"role":"user","content":{"a":1}}]}`, "content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t) // no turns: a valid request would fail the test
			resp := post(t, srv.URL, tc.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), "invalid_request_error") {
				t.Errorf("status %d body %s, want 400 mentioning %q", resp.StatusCode, b, tc.want)
			}
			if len(srv.Requests()) != 0 {
				t.Errorf("invalid request was recorded")
			}
		})
	}
}

func TestValidConversationIsAccepted(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok"))
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"x"}]},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"y"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","temperature":0.5,"max_tokens":7}`)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	r := srv.Requests()[0]
	if len(r.Messages) != 5 || r.Messages[1].Content != "x" || r.Messages[3].ToolCallID != "c1" || string(r.ToolChoice) != `"auto"` ||
		*r.Temperature != 0.5 || r.MaxTokens != 7 || r.Tools[0].Function.Name != "f" || r.LastMessage().Content != "y" {
		t.Errorf("recorded %+v", r)
	}
}

func TestAPIKey(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok")).RequireAPIKey("sk-good")
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	for _, tc := range []struct {
		header []string
		status int
		want   string
	}{
		{nil, 401, "didn't provide an API key"},
		{[]string{"Authorization", "Bearer sk-bad"}, 401, "invalid_api_key"},
		{[]string{"Authorization", "Bearer sk-good"}, 200, "ok"},
	} {
		resp := post(t, srv.URL, body, tc.header...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%v: status %d body %s", tc.header, resp.StatusCode, b)
		}
		if strings.Contains(string(b), "sk-bad") {
			t.Error("the fake echoed the key")
		}
	}
	if srv.Calls() != 3 || len(srv.Requests()) != 1 {
		t.Errorf("calls %d recorded %d", srv.Calls(), len(srv.Requests()))
	}
}

func TestModelsAndUnknownPaths(t *testing.T) {
	srv := llmtest.New(t)
	resp, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) == 0 {
		t.Errorf("models = %+v", list)
	}
	resp, err = http.Get(srv.URL + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown path status %d", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET chat/completions status %d", resp.StatusCode)
	}
}

func TestErrorTurn(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 429, ErrorType: "requests", ErrorCode: "rate_limit_exceeded", ErrorMessage: "slow down", RetryAfter: "7"})
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	var body struct {
		Error struct {
			Message, Type string
			Code          *string
		}
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || body.Error.Message != "slow down" ||
		body.Error.Type != "requests" || body.Error.Code == nil || *body.Error.Code != "rate_limit_exceeded" {
		t.Errorf("status %d header %q body %+v", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestMalformedAndCut(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Malformed: true}, llmtest.Turn{Content: "abcdefgh", ChunkSize: 1, CutAfterChunks: 3})
	resp := post(t, srv.URL, streamReq)
	b, _ := io.ReadAll(resp.Body)
	evs := events(t, string(b))
	if len(evs) < 2 || json.Valid([]byte(evs[1])) {
		t.Errorf("events %q, want an invalid JSON chunk", evs)
	}
	resp = post(t, srv.URL, streamReq)
	b, err := io.ReadAll(resp.Body)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read after cut: %v, want unexpected EOF", err)
	}
	if n := strings.Count(string(b), "data: "); n != 3 {
		t.Errorf("%d events before the cut, want 3", n)
	}
}

func TestStallIsReleasedByClientAndClose(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "abcdefgh", ChunkSize: 1, StallAfterChunks: 2})
	resp := post(t, srv.URL, streamReq)
	buf := make([]byte, 4096)
	got := ""
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(got, "data: ") < 2 && time.Now().Before(deadline) {
		n, err := resp.Body.Read(buf)
		got += string(buf[:n])
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	if strings.Count(got, "data: ") != 2 {
		t.Fatalf("got %q", got)
	}
	// Closing the handler releases the stalled reply: the body ends.
	srv.Handler().Close()
	rest, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(rest), "data: ") {
		t.Errorf("data after the stall: %q", rest)
	}
}

// errRecorder captures Errorf calls instead of failing the test.
type errRecorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (e *errRecorder) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestScriptExhausted(t *testing.T) {
	rec := &errRecorder{TB: t}
	srv := llmtest.New(rec, llmtest.Reply("one"))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	if resp := post(t, srv.URL, body); resp.StatusCode != 200 {
		t.Fatalf("first status %d", resp.StatusCode)
	}
	resp := post(t, srv.URL, body)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(b), "script exhausted: request 2 but only 1 turn(s) scripted") {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "script exhausted") {
		t.Errorf("reported errors %q", rec.errs)
	}
}

func TestScriptHandlerWithoutTB(t *testing.T) {
	n := 0
	h := llmtest.NewScriptHandler(func(r llmtest.Recorded) llmtest.Turn {
		n++
		return llmtest.Reply(fmt.Sprintf("answer %d to %s", n, r.LastMessage().Content))
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	for i := 1; i <= 2; i++ {
		resp := post(t, srv.URL+"/v1", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), fmt.Sprintf("answer %d to q", i)) {
			t.Errorf("reply %d = %s", i, b)
		}
	}
	if h.Calls() != 2 || h.Requests() != nil {
		t.Errorf("calls %d requests %v", h.Calls(), h.Requests())
	}
}

func TestGeneratedCallIDsAreUniqueAcrossTurns(t *testing.T) {
	srv := llmtest.NewHandler(t, func(llmtest.Recorded) llmtest.Turn {
		return llmtest.CallTools(llmtest.Call{Name: "f", Arguments: "{}"})
	})
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		var body struct {
			Choices []struct {
				Message struct {
					ToolCalls []llm.ToolCall `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		id := body.Choices[0].Message.ToolCalls[0].ID
		if seen[id] || !strings.HasPrefix(id, "call_") {
			t.Errorf("id %q repeated or malformed", id)
		}
		seen[id] = true
	}
}

func TestDelay(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "late", Delay: 20 * time.Millisecond})
	start := time.Now()
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || time.Since(start) < 20*time.Millisecond {
		t.Errorf("status %d after %v", resp.StatusCode, time.Since(start))
	}
}

// A burst reply carries the same events as a streamed one; the client
// just gets them together.
func TestBurstSendsTheSameEvents(t *testing.T) {
	turn := llmtest.Turn{Content: "héllo wörld", ToolCalls: []llmtest.Call{{ID: "c1", Name: "a", Arguments: `{"k":"v"}`}}, ChunkSize: 3}
	burst := turn
	burst.Burst = true
	srv := llmtest.New(t, turn, burst)
	var bodies []string
	for range 2 {
		resp := post(t, srv.URL, streamReq)
		b, _ := io.ReadAll(resp.Body)
		bodies = append(bodies, string(b))
	}
	norm := func(s string) string { // completion ids differ per reply
		evs := events(t, s)
		for i, ev := range evs {
			var c map[string]any
			if json.Unmarshal([]byte(ev), &c) == nil {
				delete(c, "id")
				b, _ := json.Marshal(c)
				evs[i] = string(b)
			}
		}
		return strings.Join(evs, "\n")
	}
	if a, b := norm(bodies[0]), norm(bodies[1]); a != b || len(events(t, bodies[1])) < 5 {
		t.Fatalf("burst events differ from streamed ones:\n%s\n---\n%s", a, b)
	}
}
