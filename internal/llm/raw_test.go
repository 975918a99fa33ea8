package llm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/odekrun/odek/internal/llm"
)

// rawServer answers every request with the given content type and body,
// counting requests.
func rawServer(t *testing.T, contentType string, body func(w io.Writer)) (url string, calls *atomic.Int32) {
	t.Helper()
	calls = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // suppress sniffing by net/http
		}
		body(w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

func text(s string) func(io.Writer) { return func(w io.Writer) { io.WriteString(w, s) } }

func TestServerQuirks(t *testing.T) {
	const sseBody = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	const jsonBody = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	for _, tc := range []struct {
		name    string
		ct      string
		body    string
		content string
		calls   []string // "name:args"
		err     error
	}{
		{name: "sse without content type", body: sseBody, content: "hi"},
		{name: "sse labelled text/plain", ct: "text/plain", body: "\n: hello\n" + sseBody, content: "hi"},
		{name: "json without content type", body: "  " + jsonBody, content: "hi"},
		{name: "json with charset", ct: "application/json; charset=utf-8", body: jsonBody, content: "hi"},
		{name: "json content parts and object arguments", ct: "application/json",
			body: `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],` +
				`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"x":1}}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_cache_hit_tokens":2}}`,
			content: "ab", calls: []string{`f:{"x":1}`}},
		{name: "json null content with reasoning", ct: "application/json",
			body:    `{"choices":[{"index":0,"message":{"content":null,"reasoning_content":"hidden","tool_calls":[{"id":"c","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			content: "", calls: []string{"g:{}"}},
		{name: "json without choices", ct: "application/json", body: `{"id":"x","choices":[]}`, err: llm.ErrMalformedResponse},
		{name: "empty body", ct: "application/json", body: ``, err: llm.ErrMalformedResponse},
		{name: "anthropic-style error event", ct: "text/event-stream",
			body: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n",
			err:  llm.ErrContextLength},
		{name: "sse ends without done after finish", ct: "text/event-stream",
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n", content: "hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, calls := rawServer(t, tc.ct, text(tc.body))
			c := newClient(t, llm.Config{BaseURL: url, MaxAttempts: 1})
			res, err := c.Complete(context.Background(), userReq("q"))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Content != tc.content {
				t.Errorf("content = %q, want %q", res.Message.Content, tc.content)
			}
			var got []string
			for _, c := range res.Message.ToolCalls {
				got = append(got, c.Function.Name+":"+c.Function.Arguments)
			}
			if strings.Join(got, ",") != strings.Join(tc.calls, ",") {
				t.Errorf("calls = %q, want %q", got, tc.calls)
			}
			if calls.Load() != 1 {
				t.Errorf("calls = %d", calls.Load())
			}
		})
	}
}

func TestLineTooLongIsNotRetried(t *testing.T) {
	url, calls := rawServer(t, "text/event-stream", func(w io.Writer) {
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"`)
		w.Write(bytes.Repeat([]byte("x"), llm.MaxSSELineBytes))
		io.WriteString(w, "\"}}]}\n\n")
	})
	c := newClient(t, llm.Config{BaseURL: url})
	_, err := c.Complete(context.Background(), userReq("q"))
	var le *llm.LineTooLongError
	if !errors.As(err, &le) || le.Limit != llm.MaxSSELineBytes || le.Observed <= llm.MaxSSELineBytes {
		t.Fatalf("err = %v, want LineTooLongError", err)
	}
	if calls.Load() != 1 {
		t.Errorf("calls = %d, want 1", calls.Load())
	}
}

func TestResponseTooLargeIsNotRetried(t *testing.T) {
	url, calls := rawServer(t, "application/json", func(w io.Writer) {
		io.WriteString(w, `{"choices":[{"message":{"content":"`)
		chunk := bytes.Repeat([]byte("y"), 1<<20)
		for i := 0; i <= llm.MaxResponseBytes>>20; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(w, `"}}]}`)
	})
	c := newClient(t, llm.Config{BaseURL: url, DisableStreaming: true})
	_, err := c.Complete(context.Background(), userReq("q"))
	var re *llm.ResponseTooLargeError
	if !errors.As(err, &re) || re.Limit != llm.MaxResponseBytes {
		t.Fatalf("err = %v, want ResponseTooLargeError", err)
	}
	if calls.Load() != 1 {
		t.Errorf("calls = %d, want 1", calls.Load())
	}
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	rec := &sleepRecorder{}
	c := newClient(t, llm.Config{BaseURL: url, Sleep: rec.sleep, MaxAttempts: 3})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrRetriesExhausted) || len(rec.got()) != 2 {
		t.Fatalf("err = %v waits %v, want retries exhausted after 3 attempts", err, rec.got())
	}
	if !strings.Contains(err.Error(), "request failed") {
		t.Errorf("message = %q", err)
	}
}
