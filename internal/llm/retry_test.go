package llm

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		ra        time.Duration
		hasRA     bool
		retryable bool
		kind      error
		typ, code string
		msg       string
	}{
		{"401", 401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz.","type":"invalid_request_error","code":"invalid_api_key"}}`, 0, false, false, ErrUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: [redacted]"},
		{"403", 403, `{"error":{"message":"Project does not have access"}}`, 0, false, false, ErrUnauthorized, "", "", "Project does not have access"},
		{"402", 402, `{"error":{"message":"Insufficient credits","code":402}}`, 0, false, false, ErrQuotaExhausted, "", "402", "Insufficient credits"},
		{"429 quota code", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, 0, false, false, ErrQuotaExhausted, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"},
		{"429 billing message", 429, `{"error":{"message":"Please check your plan and billing details."}}`, 0, false, false, ErrQuotaExhausted, "", "", "Please check your plan and billing details."},
		{"429 quota message without retry-after", 429, `{"error":{"message":"Quota exceeded for requests"}}`, 0, false, false, ErrQuotaExhausted, "", "", "Quota exceeded for requests"},
		{"429 quota message with retry-after is a rate limit", 429, `[{"error":{"code":429,"message":"Quota exceeded for metric: requests per minute","status":"RESOURCE_EXHAUSTED"}}]`, 20 * time.Second, true, true, nil, "RESOURCE_EXHAUSTED", "429", "Quota exceeded for metric: requests per minute"},
		{"429 rate limit", 429, `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`, 0, false, true, nil, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-4o"},
		{"400 context code", 400, `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, 0, false, false, ErrContextLength, "invalid_request_error", "context_length_exceeded", "too long"},
		{"400 context message vllm", 400, `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","code":400}`, 0, false, false, ErrContextLength, "BadRequestError", "400", "This model's maximum context length is 8192 tokens."},
		{"400 llama.cpp", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, 0, false, false, ErrContextLength, "exceed_context_size_error", "400", "the request exceeds the available context size, try increasing it"},
		{"400 anthropic-ish", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, 0, false, false, ErrContextLength, "invalid_request_error", "", "prompt is too long: 210000 tokens > 200000 maximum"},
		{"400 other", 400, `{"error":{"message":"Invalid schema for function"}}`, 0, false, false, nil, "", "", "Invalid schema for function"},
		{"413", 413, `<html>too large</html>`, 0, false, false, ErrContextLength, "", "", ""},
		{"404 ollama", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, 0, false, false, nil, "", "", `model "llama9" not found, try pulling it first`},
		{"408", 408, ``, 0, false, true, nil, "", "", ""},
		{"409", 409, `conflict`, 0, false, false, nil, "", "", "conflict"},
		{"422 detail", 422, `{"detail":"field required"}`, 0, false, false, nil, "", "", "field required"},
		{"500", 500, `{"error":{"message":"The server had an error","type":"server_error","code":null}}`, 0, false, true, nil, "server_error", "", "The server had an error"},
		{"502 html", 502, `<html><body>Bad Gateway</body></html>`, 0, false, true, nil, "", "", ""},
		{"503 plain text", 503, "upstream connect error\n", 0, false, true, nil, "", "", "upstream connect error"},
		{"529 overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 0, false, true, nil, "overloaded_error", "", "Overloaded"},
		{"retry-after kept", 503, ``, 3 * time.Second, true, true, nil, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, e := classify(tc.status, []byte(tc.body), tc.ra, tc.hasRA)
			if r != tc.retryable || e.kind != tc.kind || e.StatusCode != tc.status {
				t.Errorf("classify = %v, %v (status %d), want %v, %v", r, e.kind, e.StatusCode, tc.retryable, tc.kind)
			}
			if e.Type != tc.typ || e.Code != tc.code || e.Message != tc.msg {
				t.Errorf("type %q code %q msg %q, want %q %q %q", e.Type, e.Code, e.Message, tc.typ, tc.code, tc.msg)
			}
			if tc.hasRA && e.RetryAfter != tc.ra {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tc.ra)
			}
			if tc.kind != nil && !errors.Is(e, tc.kind) {
				t.Errorf("errors.Is(%v, %v) = false", e, tc.kind)
			}
			if !strings.Contains(e.Error(), fmt.Sprint(tc.status)) {
				t.Errorf("Error() %q does not name the status", e.Error())
			}
		})
	}
}

func TestClassifyInStream(t *testing.T) {
	for _, tc := range []struct {
		typ, code, msg string
		retryable      bool
		kind           error
	}{
		{"server_error", "", "The server had an error", true, nil},
		{"overloaded_error", "", "Overloaded", true, nil},
		{"", "", "something broke", true, nil},
		{"invalid_request_error", "", "bad", false, nil},
		{"invalid_request_error", "context_length_exceeded", "too long", false, ErrContextLength},
		{"authentication_error", "", "invalid x-api-key", false, ErrUnauthorized},
		{"", "invalid_api_key", "nope", false, ErrUnauthorized},
		{"insufficient_quota", "", "no money", false, ErrQuotaExhausted},
		{"", "502", "upstream failed", true, nil},
		{"", "429", "Rate limited", true, nil},
		{"", "401", "No auth credentials found", false, ErrUnauthorized},
		{"", "400", "maximum context length is 4096", false, ErrContextLength},
		{"", "404", "no endpoints found", false, nil},
	} {
		e := &APIError{Type: tc.typ, Code: tc.code, Message: tc.msg}
		r := classifyInStream(e)
		if r != tc.retryable || e.kind != tc.kind || !e.InStream || e.StatusCode != 200 {
			t.Errorf("classifyInStream(%+v) = %v, %v, want %v, %v", tc, r, e.kind, tc.retryable, tc.kind)
		}
		if !strings.Contains(e.Error(), "error in response") {
			t.Errorf("Error() = %q", e.Error())
		}
	}
}

func TestAPIErrorMessageIsTruncated(t *testing.T) {
	long := strings.Repeat("é", 2000)
	_, e := classify(500, []byte(`{"error":{"message":"`+long+`"}}`), 0, false)
	if len(e.Message) > MaxErrorMessageBytes || !strings.HasSuffix(e.Message, "…") || !strings.HasPrefix(e.Message, "éé") {
		t.Errorf("message of %d bytes: %q…", len(e.Message), e.Message[:20])
	}
	for _, r := range e.Message {
		if r == '\uFFFD' {
			t.Fatal("truncation split a rune")
		}
	}
}

func TestTruncateMessage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"ééééé", 6, "é…"},
		{"abc", 2, "…"},
	} {
		if got := truncateMessage(tc.in, tc.max); got != tc.want {
			t.Errorf("truncateMessage(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestScrubMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain message", "plain message"},
		{"Incorrect API key provided: sk-proj-abc****xyz.", "Incorrect API key provided: [redacted]"},
		{"key sk_live_1234 rejected", "key [redacted] rejected"},
		{"token abcdefghijklmnopqrstuvwxyz0123456789 bad", "token [redacted] bad"},
		{"see https://platform.openai.com/account/api-keys please", "see https://platform.openai.com/account/api-keys please"},
		{"(request ID req_0123456789abcdef0123456789abcdef)", "(request ID req_0123456789abcdef0123456789abcdef)"},
	} {
		if got := scrubMessage(tc.in); got != tc.want {
			t.Errorf("scrubMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	const base, max = 500 * time.Millisecond, 30 * time.Second
	for _, tc := range []struct {
		attempt int
		base    time.Duration
		max     time.Duration
		rand    float64
		want    time.Duration
	}{
		{1, base, max, 0, 250 * time.Millisecond},
		{1, base, max, 0.5, 375 * time.Millisecond},
		{2, base, max, 0, 500 * time.Millisecond},
		{3, base, max, 0.999, 1999 * time.Millisecond},
		{7, base, max, 0, 15 * time.Second}, // 32s capped at 30s
		{1000, base, max, 0, 15 * time.Second},
		{0, base, max, 0, 250 * time.Millisecond},
		{1, base, max, -1, 250 * time.Millisecond}, // bad rand treated as 0
		{1, base, max, 1, 250 * time.Millisecond},
		{1, 0, max, 0.5, 0},
		{1, time.Minute, max, 0, 15 * time.Second}, // base above max
	} {
		got := backoff(tc.attempt, tc.base, tc.max, tc.rand)
		if got != tc.want {
			t.Errorf("backoff(%d, %v, %v, %v) = %v, want %v", tc.attempt, tc.base, tc.max, tc.rand, got, tc.want)
		}
	}
	// Monotone in attempt for a fixed rand, always within [d/2, d].
	prev := time.Duration(0)
	for a := 1; a < 100; a++ {
		d := backoff(a, base, max, 0.3)
		if d < prev || d > max || d <= 0 {
			t.Fatalf("backoff(%d) = %v after %v", a, d, prev)
		}
		prev = d
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 12 ", 12 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"-1", 0, false},
		{"1e3", 0, false},
		{"Inf", 0, false},
		{"NaN", 0, false},
		{"0x10", 0, false},
		{"1.2.3", 0, false},
		{"99999999999999999999", maxRetryAfterSeconds * time.Second, true},
		{"Sat, 01 Mar 2025 12:00:30 GMT", 30 * time.Second, true},
		{"Saturday, 01-Mar-25 12:01:00 GMT", time.Minute, true},
		{"Sat Mar  1 12:00:10 2025", 10 * time.Second, true},
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0, true}, // in the past
		{"tomorrow", 0, false},
	} {
		got, ok := parseRetryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v, want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryAfterFromHeader(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"3"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"junk"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After-Ms": {"-5"}}, 0, false},
	} {
		got, ok := retryAfterFromHeader(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfterFromHeader(%v) = %v, %v, want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryWait(t *testing.T) {
	const base, max = time.Second, 10 * time.Second
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"backoff", errors.New("x"), 500 * time.Millisecond, true},
		{"retry-after", &APIError{RetryAfter: 7 * time.Second}, 7 * time.Second, true},
		{"retry-after at cap", &APIError{RetryAfter: RetryAfterCapFactor * max}, RetryAfterCapFactor * max, true},
		{"retry-after over cap", &APIError{RetryAfter: RetryAfterCapFactor*max + 1}, RetryAfterCapFactor*max + 1, false},
		{"wrapped", fmt.Errorf("w: %w", &APIError{RetryAfter: time.Second}), time.Second, true},
		{"zero retry-after uses backoff", &APIError{}, 500 * time.Millisecond, true},
	} {
		got, ok := retryWait(1, tc.err, base, max, 0)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: retryWait = %v, %v, want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryableTransportError(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "https://x/v1/chat/completions", Err: err} }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused", urlErr(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{"reset", urlErr(syscall.ECONNRESET), true},
		{"eof", urlErr(io.EOF), true},
		{"dns temporary", urlErr(&net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}), true},
		{"dns not found", urlErr(&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}), false},
		{"unknown authority", urlErr(x509.UnknownAuthorityError{}), false},
		{"hostname", urlErr(x509.HostnameError{Host: "x"}), false},
		{"verify", urlErr(&tls.CertificateVerificationError{Err: errors.New("bad")}), false},
		{"tls to http", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), false},
		{"scheme", errors.New(`unsupported protocol scheme "ftp"`), false},
	} {
		if got := retryableTransportError(tc.err); got != tc.want {
			t.Errorf("%s: retryableTransportError = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseErrorBodyShapes(t *testing.T) {
	for _, tc := range []struct{ body, typ, code, msg string }{
		{``, "", "", ""},
		{`   `, "", "", ""},
		{`{"error":{"message":"m","type":"t","code":"c","param":null}}`, "t", "c", "m"},
		{`{"error":{"message":"m","code":-32000}}`, "", "-32000", "m"},
		{`{"error":"just text"}`, "", "", "just text"},
		{`{"error":null,"message":"top"}`, "", "", "top"},
		{`{"message":"m","type":"t"}`, "t", "", "m"},
		{`{"detail":"d"}`, "", "", "d"},
		{`[{"error":{"code":400,"message":"gem","status":"INVALID_ARGUMENT"}}]`, "INVALID_ARGUMENT", "400", "gem"},
		{`[]`, "", "", "[]"},
		{`{"error":{"message":{"nested":true}}}`, "", "", ""},
		{`{bad json`, "", "", "{bad json"},
		{"\xff\xfe text", "", "", "\uFFFD text"},
		{`<!DOCTYPE html><html>`, "", "", ""},
	} {
		e := parseErrorBody([]byte(tc.body))
		if e.Type != tc.typ || e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("parseErrorBody(%q) = %q %q %q, want %q %q %q", tc.body, e.Type, e.Code, e.Message, tc.typ, tc.code, tc.msg)
		}
	}
}

func FuzzParseErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"m","type":"t","code":"c"}}`, `{"error":"x"}`, `[{"error":{"code":1}}]`,
		`{"detail":"d"}`, `<html>`, "", `{"error":{"message":"sk-abc"}}`,
	} {
		f.Add(429, []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		r, e := classify(status, body, 0, false)
		if len(e.Message) > MaxErrorMessageBytes || len(e.Type) > 100 || len(e.Code) > 100 {
			t.Fatalf("unbounded fields: %d %d %d", len(e.Message), len(e.Type), len(e.Code))
		}
		if r && e.kind != nil {
			t.Fatalf("retryable error with sentinel %v", e.kind)
		}
		_ = e.Error()
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "5", "1.5", "-1", "1e9", "99999999999999999999", "Sat, 01 Mar 2025 12:00:30 GMT", "Inf", "."} {
		f.Add(s)
	}
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, h string) {
		d, ok := parseRetryAfter(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", h, d, ok)
		}
		hd, hok := retryAfterFromHeader(http.Header{"Retry-After-Ms": {h}}, now)
		if hd < 0 || (!hok && hd != 0) {
			t.Fatalf("retry-after-ms %q = %v, %v", h, hd, hok)
		}
	})
}

func TestWithUpstreamReason(t *testing.T) {
	tests := []struct {
		name, msg, provider, raw, want string
	}{
		{"none", "Provider returned error", "X", "", "Provider returned error"},
		{"plain text", "Provider returned error", "BaseTen", "rate-limited upstream", "Provider returned error; upstream BaseTen said: rate-limited upstream"},
		{"json body", "Provider returned error", "OpenAI", `{"error":{"message":"bad schema","type":"invalid_request_error"}}`, "Provider returned error; upstream OpenAI said: bad schema"},
		{"json body without message", "Provider returned error", "", `{"error":{"type":"x"}}`, `Provider returned error; upstream said: {"error":{"type":"x"}}`},
		{"nested string body", "e", "", `{"error":{"message":"{\"error\":{\"message\":\"deep\"}}"}}`, "e; upstream said: deep"},
		{"same as message", "boom", "P", "boom", "boom"},
		{"no top message", "", "P", "why", "upstream P said: why"},
		{"invalid json kept as text", "e", "", `{"error":`, `e; upstream said: {"error":`},
	}
	for _, tt := range tests {
		if got := withUpstreamReason(tt.msg, tt.provider, tt.raw); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
