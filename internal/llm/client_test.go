package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/odekrun/odek/agent"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// sleepRecorder is an injected Config.Sleep that records the waits and
// returns at once (honouring ctx).
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func newClient(t *testing.T, cfg llm.Config) *llm.Client {
	t.Helper()
	if cfg.Sleep == nil {
		cfg.Sleep = (&sleepRecorder{}).sleep
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func userReq(text string) llm.Request {
	return llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

var weatherTool = llm.ToolSpec{Type: "function", Function: llm.FunctionSpec{
	Name: "get_weather", Description: "Weather for a city",
	Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}}

func TestStreamTextAnswer(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "Hello, wörld! ✓ This is a streamed answer.", ChunkSize: 5})
	srv.RequireAPIKey("sk-test-key")
	var deltas []string
	c := newClient(t, llm.Config{BaseURL: srv.URL + "/", APIKey: "sk-test-key"})

	res, err := c.CompleteStream(context.Background(), userReq("hi"), texts(func(s string) { deltas = append(deltas, s) }))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	const want = "Hello, wörld! ✓ This is a streamed answer."
	if res.Message.Content != want || res.Message.Role != llm.RoleAssistant {
		t.Errorf("message = %+v, want assistant %q", res.Message, want)
	}
	if got := strings.Join(deltas, ""); got != want || len(deltas) < 5 {
		t.Errorf("deltas = %q (%d), want %q in several pieces", got, len(deltas), want)
	}
	if res.FinishReason != "stop" || res.Model != "test-model" {
		t.Errorf("finish %q model %q", res.FinishReason, res.Model)
	}
	if res.Usage.PromptTokens <= 0 || res.Usage.CompletionTokens <= 0 {
		t.Errorf("usage = %+v, want estimated tokens", res.Usage)
	}
	tm := res.Timing
	if tm.Attempts != 1 || tm.TTFT <= 0 || tm.Duration < tm.TTFT || tm.Generation <= 0 || tm.Generation > tm.Duration {
		t.Errorf("timing = %+v", tm)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("stream %v options %+v, want stream with include_usage", r.Stream, r.StreamOptions)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-key" {
		t.Errorf("Authorization = %q", got)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "tool_choice", "temperature", "max_tokens"} {
		if _, ok := top[k]; ok {
			t.Errorf("request body has %q, want it omitted: %s", k, r.Body)
		}
	}
}

func TestNoAuthorizationHeaderWithoutKey(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("ok"))
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	if _, err := c.Complete(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if h, ok := srv.Requests()[0].Header["Authorization"]; ok {
		t.Errorf("Authorization sent without a key: %q", h)
	}
}

func TestToolCallsSplitAcrossChunks(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			calls := []llmtest.Call{
				{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Zürich","unit":"celsius"}`},
				{Name: "get_weather", Arguments: `{"city":"Paris \"Île\" \\ \u2028"}`},
				{ID: "call_c", Name: "list_files", Arguments: ``},
			}
			srv := llmtest.New(t, llmtest.Turn{Content: "Let me check.", ToolCalls: calls, ChunkSize: 3})
			c := newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: !stream})
			req := userReq("weather?")
			req.Tools = []llm.ToolSpec{weatherTool, {Function: llm.FunctionSpec{Name: "list_files"}}}
			res, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Message.ToolCalls
			if len(got) != 3 {
				t.Fatalf("got %d tool calls: %+v", len(got), got)
			}
			wantArgs := []string{calls[0].Arguments, calls[1].Arguments, "{}"}
			wantNames := []string{"get_weather", "get_weather", "list_files"}
			for i, tc := range got {
				if tc.Function.Arguments != wantArgs[i] || tc.Function.Name != wantNames[i] || tc.Type != "function" {
					t.Errorf("call %d = %+v, want %s(%s)", i, tc, wantNames[i], wantArgs[i])
				}
			}
			if got[0].ID != "call_a" || got[2].ID != "call_c" || got[1].ID == got[0].ID {
				t.Errorf("ids = %q %q %q", got[0].ID, got[1].ID, got[2].ID)
			}
			if res.Message.Content != "Let me check." || res.FinishReason != "tool_calls" {
				t.Errorf("content %q finish %q", res.Message.Content, res.FinishReason)
			}
			// The ToolSpec without a type went out as "function" (the fake
			// rejects anything else).
			if tools := srv.Requests()[0].Tools; len(tools) != 2 || tools[1].Type != "function" {
				t.Errorf("tools sent = %+v", tools)
			}
			if stream {
				// The arguments really were split: the fake sends at least
				// two argument deltas per call of 2+ bytes.
				body := srv.Requests()[0].Body
				if len(body) == 0 {
					t.Error("no body recorded")
				}
			}
		})
	}
}

func TestReasoningNeverInContent(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Turn{Reasoning: "SECRET chain of thought", Content: "The answer is 42."})
			var deltas strings.Builder
			c := newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: !stream})
			res, err := c.CompleteStream(context.Background(), userReq("q"), texts(func(s string) { deltas.WriteString(s) }))
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Content != "The answer is 42." {
				t.Errorf("content = %q", res.Message.Content)
			}
			if strings.Contains(deltas.String(), "SECRET") {
				t.Errorf("reasoning delivered as a delta: %q", deltas.String())
			}
			if deltas.String() != "The answer is 42." {
				t.Errorf("deltas = %q", deltas.String())
			}
		})
	}
}

func TestUsageWithCachedTokens(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			want := llm.Usage{PromptTokens: 1200, CompletionTokens: 34, CachedTokens: 1024}
			srv := llmtest.New(t, llmtest.Turn{Content: "ok", Usage: &want})
			c := newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: !stream})
			res, err := c.Complete(context.Background(), userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != want {
				t.Errorf("usage = %+v, want %+v", res.Usage, want)
			}
		})
	}
}

func TestNonStreamingRequestShape(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply("plain"))
	c := newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: true})
	temp := 0.2
	req := userReq("q")
	req.Temperature, req.MaxTokens = &temp, 99
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "plain" || res.Timing.Duration <= 0 || res.Timing.TTFT != 0 {
		t.Errorf("res = %+v", res)
	}
	r := srv.Requests()[0]
	if r.Stream || r.StreamOptions != nil {
		t.Errorf("stream %v options %+v, want neither", r.Stream, r.StreamOptions)
	}
	if r.Temperature == nil || *r.Temperature != 0.2 || r.MaxTokens != 99 {
		t.Errorf("temperature %v max_tokens %d", r.Temperature, r.MaxTokens)
	}
}

func TestReplyModeMismatchIsTolerated(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name    string
		disable bool
		stream  *bool
	}{
		{"asked stream got json", false, &no},
		{"asked json got stream", true, &yes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Turn{Content: "answer", Stream: tc.stream,
				ToolCalls: []llmtest.Call{{Name: "f", Arguments: `{"a":1}`}}})
			c := newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: tc.disable})
			res, err := c.Complete(context.Background(), userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Content != "answer" || len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Function.Arguments != `{"a":1}` {
				t.Errorf("message = %+v", res.Message)
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Turn{Status: 429, ErrorType: "requests", ErrorMessage: "Rate limit reached", RetryAfter: "2"},
		llmtest.Turn{Status: 503, ErrorMessage: "overloaded"},
		llmtest.Turn{Status: 429, RetryAfter: "0.25"},
		llmtest.Reply("finally"),
	)
	rec := &sleepRecorder{}
	var retries []llm.Retry
	c := newClient(t, llm.Config{BaseURL: srv.URL, Sleep: rec.sleep, BaseBackoff: 100 * time.Millisecond,
		MaxBackoff: 10 * time.Second, OnRetry: func(r llm.Retry) { retries = append(retries, r) }})
	res, err := c.Complete(context.Background(), userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "finally" || res.Timing.Attempts != 4 || srv.Calls() != 4 {
		t.Errorf("content %q attempts %d calls %d", res.Message.Content, res.Timing.Attempts, srv.Calls())
	}
	w := rec.got()
	if len(w) != 3 {
		t.Fatalf("waits = %v, want 3", w)
	}
	if w[0] != 2*time.Second {
		t.Errorf("wait after Retry-After: 2 = %v", w[0])
	}
	// Second retry: backoff for attempt 2 = 200ms with equal jitter ⇒ [100ms, 200ms).
	if w[1] < 100*time.Millisecond || w[1] >= 200*time.Millisecond {
		t.Errorf("backoff wait = %v, want [100ms,200ms)", w[1])
	}
	if w[2] != 250*time.Millisecond {
		t.Errorf("wait after Retry-After: 0.25 = %v", w[2])
	}
	if len(retries) != 3 || retries[0].Attempt != 1 || retries[0].Wait != 2*time.Second || retries[2].Attempt != 3 {
		t.Errorf("OnRetry = %+v", retries)
	}
	var ae *llm.APIError
	if !errors.As(retries[0].Err, &ae) || ae.StatusCode != 429 || ae.RetryAfter != 2*time.Second || ae.Message != "Rate limit reached" {
		t.Errorf("first retry error = %#v", retries[0].Err)
	}
}

func TestRetryAfterBeyondCapIsNotRetried(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 429, RetryAfter: "3600"})
	rec := &sleepRecorder{}
	c := newClient(t, llm.Config{BaseURL: srv.URL, Sleep: rec.sleep})
	_, err := c.Complete(context.Background(), userReq("q"))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want APIError with RetryAfter 1h", err)
	}
	if srv.Calls() != 1 || len(rec.got()) != 0 {
		t.Errorf("calls %d waits %v, want 1 and none", srv.Calls(), rec.got())
	}
	if !strings.Contains(err.Error(), "1h0m0s") {
		t.Errorf("error does not name the asked wait: %v", err)
	}
}

func TestUnauthorizedFailsAtOnce(t *testing.T) {
	const key = "sk-proj-WRONGKEY0123456789abcdefghijklmnop"
	srv := llmtest.New(t).RequireAPIKey("sk-right")
	c := newClient(t, llm.Config{BaseURL: srv.URL, APIKey: key})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Code != "invalid_api_key" {
		t.Errorf("APIError = %#v", ae)
	}
	if srv.Calls() != 1 {
		t.Errorf("calls = %d, want 1 (no retry)", srv.Calls())
	}
	if msg := err.Error(); !strings.Contains(msg, "check the API key") || strings.Contains(msg, key) || strings.Contains(msg, "WRONGKEY") {
		t.Errorf("message = %q", msg)
	}
}

func TestForbiddenAndUnauthorizedProviderEchoIsScrubbed(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 403, ErrorMessage: "Incorrect API key provided: sk-proj-abc*****************wxyz. You can find your API key at https://platform.openai.com/account/api-keys."})
	c := newClient(t, llm.Config{BaseURL: srv.URL, APIKey: "sk-proj-abcdefwxyz"})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrUnauthorized) || srv.Calls() != 1 {
		t.Fatalf("err = %v calls %d", err, srv.Calls())
	}
	if strings.Contains(err.Error(), "wxyz") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("key echo not scrubbed: %v", err)
	}
}

func TestQuotaExhaustedFailsAtOnce(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota",
		ErrorMessage: "You exceeded your current quota, please check your plan and billing details."})
	rec := &sleepRecorder{}
	c := newClient(t, llm.Config{BaseURL: srv.URL, Sleep: rec.sleep})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrQuotaExhausted) || errors.Is(err, llm.ErrRetriesExhausted) {
		t.Fatalf("err = %v, want ErrQuotaExhausted only", err)
	}
	if srv.Calls() != 1 || len(rec.got()) != 0 {
		t.Errorf("calls %d waits %v", srv.Calls(), rec.got())
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 500, ErrorType: "server_error"}, llmtest.Reply("recovered"))
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	res, err := c.Complete(context.Background(), userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "recovered" || res.Timing.Attempts != 2 {
		t.Errorf("content %q attempts %d", res.Message.Content, res.Timing.Attempts)
	}
}

func TestRetriesExhausted(t *testing.T) {
	turns := make([]llmtest.Turn, 4)
	for i := range turns {
		turns[i] = llmtest.Turn{Status: 502, ErrorMessage: fmt.Sprintf("bad gateway %d", i+1)}
	}
	srv := llmtest.New(t, turns...)
	rec := &sleepRecorder{}
	c := newClient(t, llm.Config{BaseURL: srv.URL, Sleep: rec.sleep})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrRetriesExhausted) {
		t.Fatalf("err = %v, want ErrRetriesExhausted", err)
	}
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 502 || ae.Message != "bad gateway 4" {
		t.Errorf("last error = %#v", ae)
	}
	if !strings.Contains(err.Error(), "4 attempt") || srv.Calls() != 4 || len(rec.got()) != 3 {
		t.Errorf("err %q calls %d waits %v", err, srv.Calls(), rec.got())
	}
}

func TestMaxAttemptsOneMeansNoRetry(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 500})
	c := newClient(t, llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrRetriesExhausted) || srv.Calls() != 1 {
		t.Fatalf("err %v calls %d", err, srv.Calls())
	}
}

func TestContextLengthExceeded(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn llmtest.Turn
	}{
		{"openai code", llmtest.Turn{Status: 400, ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded",
			ErrorMessage: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."}},
		{"message only", llmtest.Turn{Status: 400, ErrorMessage: "the request exceeds the available context size, try increasing it"}},
		{"413", llmtest.Turn{Status: 413}},
		{"in stream", llmtest.Turn{ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded", ErrorMessage: "too long"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.turn)
			c := newClient(t, llm.Config{BaseURL: srv.URL})
			_, err := c.Complete(context.Background(), userReq("q"))
			if !errors.Is(err, llm.ErrContextLength) || srv.Calls() != 1 {
				t.Fatalf("err = %v calls %d, want ErrContextLength after 1 call", err, srv.Calls())
			}
		})
	}
}

func TestOtherClientErrorsFailAtOnce(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Status: 404, ErrorCode: "model_not_found", ErrorMessage: "The model `nope` does not exist"})
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	_, err := c.Complete(context.Background(), userReq("q"))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 404 || srv.Calls() != 1 {
		t.Fatalf("err = %v calls %d", err, srv.Calls())
	}
	if !strings.Contains(err.Error(), "check the base URL and the model name") || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("message = %q", err)
	}
}

func TestMalformedJSON(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Turn{Malformed: true}, llmtest.Reply("good"))
			c := newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: !stream})
			res, err := c.Complete(context.Background(), userReq("q"))
			if err != nil || res.Message.Content != "good" || res.Timing.Attempts != 2 {
				t.Fatalf("res %+v err %v, want success on attempt 2", res, err)
			}

			srv = llmtest.New(t, llmtest.Turn{Malformed: true})
			c = newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: !stream, MaxAttempts: 1})
			_, err = c.Complete(context.Background(), userReq("q"))
			if !errors.Is(err, llm.ErrMalformedResponse) {
				t.Fatalf("err = %v, want ErrMalformedResponse", err)
			}
		})
	}
}

func TestStreamCutThenRetrySucceeds(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Turn{Content: "partial answer that will be cut", ChunkSize: 4, CutAfterChunks: 3},
		llmtest.Reply("complete answer"),
	)
	var retries []llm.Retry
	var deltas strings.Builder
	restarts := 0
	c := newClient(t, llm.Config{BaseURL: srv.URL, OnRetry: func(r llm.Retry) { retries = append(retries, r) }})
	res, err := c.CompleteStream(context.Background(), userReq("q"), func(d agent.Delta) {
		if d.Restart {
			restarts++
		}
		deltas.WriteString(d.Text)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "complete answer" || res.Timing.Attempts != 2 {
		t.Errorf("content %q attempts %d", res.Message.Content, res.Timing.Attempts)
	}
	if len(retries) != 1 || !errors.Is(retries[0].Err, llm.ErrStreamInterrupted) || !retries[0].Partial {
		t.Errorf("retries = %+v, want one partial ErrStreamInterrupted", retries)
	}
	if restarts != 1 {
		t.Errorf("%d restarts, want 1 (before the second attempt)", restarts)
	}
	if got := deltas.String(); got != "partial "+"complete answer" {
		t.Errorf("deltas = %q (first attempt's two content chunks, then the full answer)", got)
	}
}

func TestStreamCutWithoutRetries(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "abcdefghijkl", ChunkSize: 2, CutAfterChunks: 2})
	c := newClient(t, llm.Config{BaseURL: srv.URL, MaxAttempts: 1})
	_, err := c.Complete(context.Background(), userReq("q"))
	if !errors.Is(err, llm.ErrStreamInterrupted) {
		t.Fatalf("err = %v, want ErrStreamInterrupted", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "abcdefghijkl", ChunkSize: 2, StallAfterChunks: 2})
	c := newClient(t, llm.Config{BaseURL: srv.URL, MaxAttempts: 1, IdleTimeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), userReq("q"))
	var idle *llm.IdleTimeoutError
	if !errors.As(err, &idle) || idle.Idle != 50*time.Millisecond {
		t.Fatalf("err = %v, want IdleTimeoutError{50ms}", err)
	}
	if !strings.Contains(err.Error(), "50ms") {
		t.Errorf("message %q does not name the limit", err)
	}
}

func TestIdleTimeoutIsRetried(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Content: "abcdefgh", ChunkSize: 2, StallAfterChunks: 1}, llmtest.Reply("ok"))
	c := newClient(t, llm.Config{BaseURL: srv.URL, IdleTimeout: 50 * time.Millisecond})
	res, err := c.Complete(context.Background(), userReq("q"))
	if err != nil || res.Message.Content != "ok" || res.Timing.Attempts != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestRequestTimeout(t *testing.T) {
	srv := llmtest.New(t, llmtest.Turn{Delay: time.Hour})
	c := newClient(t, llm.Config{BaseURL: srv.URL, MaxAttempts: 1, RequestTimeout: 50 * time.Millisecond})
	_, err := c.Complete(context.Background(), userReq("q"))
	var rt *llm.RequestTimeoutError
	if !errors.As(err, &rt) || rt.Timeout != 50*time.Millisecond {
		t.Fatalf("err = %v, want RequestTimeoutError{50ms}", err)
	}
}

func TestErrorInsideStream(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Turn{ErrorType: "server_error", ErrorMessage: "The server had an error while processing your request."},
		llmtest.Reply("after"),
	)
	var retries []llm.Retry
	c := newClient(t, llm.Config{BaseURL: srv.URL, OnRetry: func(r llm.Retry) { retries = append(retries, r) }})
	res, err := c.Complete(context.Background(), userReq("q"))
	if err != nil || res.Message.Content != "after" {
		t.Fatalf("res %+v err %v", res, err)
	}
	var ae *llm.APIError
	if len(retries) != 1 || !errors.As(retries[0].Err, &ae) || !ae.InStream || ae.Type != "server_error" || ae.StatusCode != 200 {
		t.Errorf("retries = %+v", retries)
	}

	// The same error in a 200 JSON body.
	srv = llmtest.New(t, llmtest.Turn{ErrorType: "invalid_request_error", ErrorMessage: "bad thing"})
	c = newClient(t, llm.Config{BaseURL: srv.URL, DisableStreaming: true})
	_, err = c.Complete(context.Background(), userReq("q"))
	if !errors.As(err, &ae) || !ae.InStream || ae.Message != "bad thing" || srv.Calls() != 1 {
		t.Errorf("err = %v calls %d", err, srv.Calls())
	}
}

func TestCancellation(t *testing.T) {
	t.Run("during stream read", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Turn{Content: "abcdefgh", ChunkSize: 2, StallAfterChunks: 2})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := newClient(t, llm.Config{BaseURL: srv.URL})
		_, err := c.CompleteStream(ctx, userReq("q"), func(agent.Delta) { cancel() })
		if !errors.Is(err, context.Canceled) || srv.Calls() != 1 {
			t.Fatalf("err = %v calls %d, want context.Canceled after 1 call", err, srv.Calls())
		}
	})
	t.Run("before headers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The server cancels the client's context once the request arrived,
		// then delays its headers for good.
		srv := llmtest.NewHandler(t, func(llmtest.Recorded) llmtest.Turn {
			cancel()
			return llmtest.Turn{Delay: time.Hour}
		})
		c := newClient(t, llm.Config{BaseURL: srv.URL})
		_, err := c.Complete(ctx, userReq("q"))
		if !errors.Is(err, context.Canceled) || srv.Calls() != 1 {
			t.Fatalf("err = %v calls %d, want context.Canceled", err, srv.Calls())
		}
	})
	t.Run("during backoff", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Turn{Status: 500})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The real sleep, with a wait far longer than the test.
		c, err := llm.New(llm.Config{BaseURL: srv.URL, BaseBackoff: time.Hour, MaxBackoff: time.Hour,
			OnRetry: func(llm.Retry) { cancel() }})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(ctx, userReq("q"))
		if !errors.Is(err, context.Canceled) || srv.Calls() != 1 {
			t.Fatalf("err = %v calls %d", err, srv.Calls())
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		srv := llmtest.New(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c := newClient(t, llm.Config{BaseURL: srv.URL})
		if _, err := c.Complete(ctx, userReq("q")); !errors.Is(err, context.Canceled) || srv.Calls() != 0 {
			t.Fatalf("err = %v calls %d", err, srv.Calls())
		}
	})
	t.Run("deadline shorter than backoff", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Turn{Status: 503})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := newClient(t, llm.Config{BaseURL: srv.URL, BaseBackoff: time.Hour, MaxBackoff: time.Hour})
		_, err := c.Complete(ctx, userReq("q"))
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 503 || !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestToolConversationRoundTrip(t *testing.T) {
	// A dynamic server: call a tool first, then answer from the tool result.
	srv := llmtest.NewHandler(t, func(r llmtest.Recorded) llmtest.Turn {
		last := r.LastMessage()
		if last.Role == llm.RoleTool {
			return llmtest.Reply("It is " + last.Content)
		}
		return llmtest.CallTools(llmtest.Call{Name: "get_weather", Arguments: `{"city":"Oslo"}`})
	})
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	req := userReq("weather in Oslo?")
	req.Tools = []llm.ToolSpec{weatherTool}
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Message.ToolCalls) != 1 {
		t.Fatalf("message = %+v", res.Message)
	}
	// The assistant message goes back as is (Type stripped to prove the
	// client fills it in), followed by the tool result.
	am := res.Message
	am.ToolCalls[0].Type = ""
	req.Messages = append(req.Messages, am, llm.Message{Role: llm.RoleTool, ToolCallID: res.Message.ToolCalls[0].ID, Content: "sunny"})
	res, err = c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "It is sunny" {
		t.Errorf("content = %q", res.Message.Content)
	}
	if am.ToolCalls[0].Type != "" {
		t.Error("Complete modified the caller's message")
	}
}

func TestInvalidRequestIsNotSent(t *testing.T) {
	srv := llmtest.New(t)
	c := newClient(t, llm.Config{BaseURL: srv.URL})
	for _, req := range []llm.Request{
		{Messages: userReq("q").Messages},
		{Model: "m"},
		{Model: "m", Messages: userReq("q").Messages, Tools: []llm.ToolSpec{{Function: llm.FunctionSpec{Name: "x", Parameters: json.RawMessage(`{bad`)}}}},
		{Model: "m", Messages: userReq("q").Messages, Tools: []llm.ToolSpec{{}}},
	} {
		if _, err := c.Complete(context.Background(), req); !errors.Is(err, llm.ErrInvalidRequest) {
			t.Errorf("Complete(%+v) = %v, want ErrInvalidRequest", req, err)
		}
	}
	if srv.Calls() != 0 {
		t.Errorf("calls = %d, want 0", srv.Calls())
	}
}

func TestNewValidatesConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg llm.Config
		ok  bool
	}{
		{llm.Config{BaseURL: "https://api.openai.com/v1"}, true},
		{llm.Config{BaseURL: "http://127.0.0.1:11434/v1/"}, true},
		{llm.Config{BaseURL: "https://example.com/openai/deployments/x?api-version=2024-06-01"}, true},
		{llm.Config{}, false},
		{llm.Config{BaseURL: "ftp://example.com"}, false},
		{llm.Config{BaseURL: "https://"}, false},
		{llm.Config{BaseURL: "example.com/v1"}, false},
		{llm.Config{BaseURL: "https://x/v1#frag"}, false},
		{llm.Config{BaseURL: "https://x/v1", MaxAttempts: -1}, false},
		{llm.Config{BaseURL: "https://x/v1", IdleTimeout: -time.Second}, false},
		{llm.Config{BaseURL: "https://x/v1", APIKey: "a\nb"}, false},
	} {
		_, err := llm.New(tc.cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, llm.ErrInvalidRequest)) {
			t.Errorf("New(%+v) = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}

func TestQueryStringInBaseURLIsKept(t *testing.T) {
	var gotURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotURL = r.URL.String()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	c := newClient(t, llm.Config{BaseURL: srv.URL + "/openai/deployments/d/?api-version=1", DisableStreaming: true})
	if _, err := c.Complete(context.Background(), userReq("q")); err != nil {
		t.Fatal(err)
	}
	if gotURL != "/openai/deployments/d/chat/completions?api-version=1" {
		t.Errorf("URL = %q", gotURL)
	}
}

// texts adapts a text callback to CompleteStream's delta.
func texts(f func(string)) func(agent.Delta) {
	return func(d agent.Delta) { f(d.Text) }
}
