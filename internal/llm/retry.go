package llm

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	expbackoff "github.com/odekrun/odek/internal/backoff"
	"github.com/odekrun/odek/internal/jsonwire"
)

// This file holds the pure decisions of the retry loop: what an error
// response means, how long to wait, which transport errors are worth
// another attempt. Client.Complete only calls them.

// RetryAfterCapFactor bounds an honoured Retry-After: the client waits at
// most RetryAfterCapFactor × MaxBackoff (2 minutes with the defaults). A
// provider asking for longer is not retried at all; the error is returned
// with APIError.RetryAfter set, since retrying sooner than asked would
// only fail again and waiting longer would stall the agent.
const RetryAfterCapFactor = 4

// classify turns a non-2xx response into an *APIError and decides whether
// another attempt may succeed. retryAfter/hasRetryAfter come from
// retryAfterFromHeader.
//
//   - 401, 403: ErrUnauthorized, final.
//   - 402, or 429 that says the quota is gone: ErrQuotaExhausted, final. A
//     429 whose message merely mentions an exceeded quota but that carries
//     a Retry-After is a rate limit (Gemini words per-minute limits so).
//   - 400, 413 (and 422) that say the context is too long: ErrContextLength,
//     final. 413 always is: the request must shrink.
//   - 408, 429, 5xx: retryable.
//   - any other status: final.
func classify(status int, body []byte, retryAfter time.Duration, hasRetryAfter bool) (retryable bool, err *APIError) {
	e := parseErrorBody(body)
	e.StatusCode = status
	if hasRetryAfter {
		e.RetryAfter = retryAfter
	}
	return decide(status, e, hasRetryAfter), e
}

// decide sets e's sentinel from status and e's type, code and message (see
// classify) and reports whether another attempt may succeed.
func decide(status int, e *APIError, hasRetryAfter bool) (retryable bool) {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.kind = ErrUnauthorized
	case status == http.StatusPaymentRequired:
		e.kind = ErrQuotaExhausted
	case status == http.StatusTooManyRequests && isQuotaError(e, hasRetryAfter):
		e.kind = ErrQuotaExhausted
	case status == http.StatusRequestEntityTooLarge:
		e.kind = ErrContextLength
	case (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) && isContextError(e):
		e.kind = ErrContextLength
	}
	if e.kind != nil {
		return false
	}
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// classifyInStream decides an error object received inside a 200 reply
// and marks e as such. A numeric code in 400–599 is treated as that HTTP
// status (OpenRouter reports upstream failures so). Otherwise:
// authentication/permission errors and invalid_api_key are
// ErrUnauthorized, quota messages ErrQuotaExhausted, context messages
// ErrContextLength, invalid_request_error is final, and anything else
// (server_error, overloaded_error, rate limits, unknown types) is
// retryable: an error mid-stream is most often a transient provider fault.
func classifyInStream(e *APIError) (retryable bool) {
	e.InStream = true
	if e.StatusCode == 0 {
		e.StatusCode = http.StatusOK
	}
	if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n <= 599 {
		return decide(n, e, false)
	}
	t := strings.ToLower(e.Type)
	switch {
	case t == "authentication_error" || t == "permission_error" || e.Code == "invalid_api_key":
		e.kind = ErrUnauthorized
	case isQuotaError(e, false):
		e.kind = ErrQuotaExhausted
	case isContextError(e):
		e.kind = ErrContextLength
	}
	if e.kind != nil {
		return false
	}
	return t != "invalid_request_error"
}

// streamAPIError builds the APIError for an error object in a stream.
func streamAPIError(v *errorView) *APIError {
	var b []byte
	str := func(j jstr) string {
		if !j.ok {
			return ""
		}
		b = appendStr(b[:0], j)
		return string(b)
	}
	msg := str(v.message)
	if len(v.metaRaw) > 0 {
		raw := v.metaRaw
		if raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				raw = []byte(s)
			}
		}
		msg = withUpstreamReason(msg, str(v.provider), string(raw))
	}
	e := &APIError{
		Type:    str(v.typ),
		Code:    str(v.code),
		Message: truncateMessage(scrubMessage(msg), MaxErrorMessageBytes),
	}
	classifyInStream(e)
	return e
}

// isQuotaError reports whether e says the account's quota or credit is
// exhausted (as opposed to a rate limit that passes).
func isQuotaError(e *APIError, hasRetryAfter bool) bool {
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" {
		return true
	}
	m := strings.ToLower(e.Message)
	if strings.Contains(m, "billing") || strings.Contains(m, "insufficient credit") ||
		strings.Contains(m, "credit balance") || strings.Contains(m, "out of credits") {
		return true
	}
	if hasRetryAfter {
		return false
	}
	return strings.Contains(m, "quota") &&
		(strings.Contains(m, "exceeded") || strings.Contains(m, "exhausted") || strings.Contains(m, "insufficient"))
}

// contextPhrases are what providers say when a prompt does not fit: OpenAI
// and vLLM ("maximum context length"), llama.cpp ("context size",
// exceed_context_size_error), Anthropic-compatible ("prompt is too long"),
// others ("context window", "context length").
var contextPhrases = []string{
	"context_length_exceeded", "exceed_context_size", "maximum context length",
	"context window", "context length", "context size", "prompt is too long",
}

// isContextError reports whether e says the request exceeds the model's
// context window.
func isContextError(e *APIError) bool {
	for _, s := range [...]string{e.Code, e.Type, strings.ToLower(e.Message)} {
		for _, p := range contextPhrases {
			if strings.Contains(s, p) {
				return true
			}
		}
	}
	return false
}

// parseErrorBody extracts type, code and message from an error body in
// any of the shapes providers use: {"error":{"message","type","code"}},
// {"error":"text"}, {"message","type","code"}, {"detail":"text"}, a
// one-element array of one of those (Gemini), or plain text. HTML pages
// (from proxies) are not quoted. The message is scrubbed and truncated.
func parseErrorBody(body []byte) *APIError {
	e := &APIError{}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
			body = arr[0]
		}
	}
	type fields struct {
		Message  json.RawMessage `json:"message"`
		Type     json.RawMessage `json:"type"`
		Code     json.RawMessage `json:"code"`
		Status   json.RawMessage `json:"status"` // Gemini's type
		Detail   json.RawMessage `json:"detail"`
		Metadata *struct {
			Raw          json.RawMessage `json:"raw"`           // OpenRouter: the upstream's own error
			ProviderName json.RawMessage `json:"provider_name"` // OpenRouter: which upstream
		} `json:"metadata"`
	}
	var top struct {
		fields
		Error json.RawMessage `json:"error"`
	}
	switch {
	case len(body) == 0:
	case body[0] == '{' && json.Unmarshal(body, &top) == nil:
		f := top.fields
		var inner fields
		if len(top.Error) > 0 && top.Error[0] == '{' && json.Unmarshal(top.Error, &inner) == nil {
			f = inner
		} else if jsonText(top.Error) != "" {
			f.Message = top.Error
		}
		e.Message = jsonText(f.Message)
		if e.Message == "" {
			e.Message = jsonText(f.Detail)
		}
		e.Type = jsonText(f.Type)
		if e.Type == "" {
			e.Type = jsonText(f.Status)
		}
		e.Code = jsonText(f.Code)
		if md := f.Metadata; md != nil {
			raw := bytes.TrimSpace(md.Raw)
			if len(raw) > 0 && raw[0] == '{' {
				e.Message = withUpstreamReason(e.Message, jsonText(md.ProviderName), string(raw))
			} else {
				e.Message = withUpstreamReason(e.Message, jsonText(md.ProviderName), jsonText(md.Raw))
			}
		}
	case body[0] == '<':
		// An HTML error page: the status says enough.
	default:
		e.Message = strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	}
	e.Message = truncateMessage(scrubMessage(e.Message), MaxErrorMessageBytes)
	e.Type = truncateMessage(e.Type, 100)
	e.Code = truncateMessage(e.Code, 100)
	return e
}

// MaxUpstreamDepth bounds how many nested error bodies withUpstreamReason
// unwraps (an upstream reason that is itself an error body whose message is
// one, …).
const maxUpstreamDepth = 3

// withUpstreamReason joins a gateway's top-level message with the reason it
// relayed from the upstream provider (OpenRouter's error.metadata.raw, with
// metadata.provider_name), so the user sees why the request failed and not
// only "Provider returned error". raw is the upstream's text: when it is
// itself a JSON error body, its message is taken (nested up to
// maxUpstreamDepth levels), else the text as it is. An empty reason leaves
// msg unchanged; a reason equal to msg is not repeated.
func withUpstreamReason(msg, provider, raw string) string {
	reason := strings.TrimSpace(raw)
	for depth := 0; depth < maxUpstreamDepth; depth++ {
		b := []byte(reason)
		if len(b) == 0 || (b[0] != '{' && b[0] != '[') || !json.Valid(b) {
			break
		}
		inner := parseErrorBody(b)
		if inner.Message == "" {
			break
		}
		reason = inner.Message
	}
	if reason == "" || reason == msg {
		return msg
	}
	var b strings.Builder
	b.WriteString(msg)
	if msg != "" {
		b.WriteString("; ")
	}
	b.WriteString("upstream")
	if provider != "" {
		b.WriteString(" ")
		b.WriteString(provider)
	}
	b.WriteString(" said: ")
	b.WriteString(reason)
	return b.String()
}

// jsonText renders a JSON string as its value and a number as its literal;
// other values (null, objects) as "".
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if s, ok := jsonwire.StringValue(raw); ok {
		return s
	}
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return string(raw)
	}
	return ""
}

// scrubMessage masks anything in a provider message that looks like an API
// key: words starting with "sk-" (OpenAI and many others echo a masked key
// in 401 messages, showing its last characters) and long unbroken
// alphanumeric tokens of 32+ characters (request ids "req_…" and
// "chatcmpl-…" excepted).
func scrubMessage(s string) string {
	if s == "" {
		return s
	}
	words := strings.Fields(s)
	changed := false
	for i, w := range words {
		if looksLikeKey(w) {
			words[i] = "[redacted]"
			changed = true
		}
	}
	if !changed {
		return s
	}
	return strings.Join(words, " ")
}

func looksLikeKey(w string) bool {
	w = strings.Trim(w, `.,;:'"()[]`)
	if strings.HasPrefix(w, "sk-") || strings.HasPrefix(w, "sk_") {
		return true
	}
	if len(w) < 32 || strings.HasPrefix(w, "req_") || strings.HasPrefix(w, "chatcmpl-") {
		return false // request ids help support and are not secrets
	}
	for _, r := range w {
		if !(r == '-' || r == '_' || r == '*' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// backoff is the wait before retry number attempt (1 = after the first
// failure): base·2^(attempt-1), capped at max, with "equal jitter" — half
// of it fixed, half scaled by rand01 ∈ [0,1) — so waits never collapse to
// zero and concurrent clients spread out.
func backoff(attempt int, base, max time.Duration, rand01 float64) time.Duration {
	if base <= 0 || max <= 0 {
		return 0
	}
	return expbackoff.Delay(attempt, min(base, max), max, 0.5, rand01)
}

// maxRetryAfterSeconds keeps Retry-After arithmetic far from overflow.
const maxRetryAfterSeconds = 1 << 31

// parseRetryAfter parses a Retry-After value: delay-seconds (a
// non-negative integer; a decimal fraction is tolerated) or an HTTP date,
// which is converted relative to now (a date in the past means 0).
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if isDecimal(h) {
		f, err := strconv.ParseFloat(h, 64)
		if err != nil {
			return 0, false
		}
		return time.Duration(math.Min(f, maxRetryAfterSeconds) * float64(time.Second)), true
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	return d, true
}

// isDecimal reports whether s is digits with at most one '.' (and at least
// one digit): the only number forms a Retry-After may take.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// retryAfterFromHeader reads the wait a response asks for: retry-after-ms
// (Azure, OpenAI) when present and valid, else Retry-After.
func retryAfterFromHeader(h http.Header, now time.Time) (time.Duration, bool) {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && isDecimal(ms) {
			return time.Duration(math.Min(f, maxRetryAfterSeconds*1000) * float64(time.Millisecond)), true
		}
	}
	return parseRetryAfter(h.Get("Retry-After"), now)
}

// retryWait decides the wait before retry number attempt after err: the
// provider's Retry-After when it gave one (not retrying when it exceeds
// RetryAfterCapFactor × max), else backoff.
func retryWait(attempt int, err error, base, max time.Duration, rand01 float64) (time.Duration, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		if ae.RetryAfter > RetryAfterCapFactor*max {
			return ae.RetryAfter, false
		}
		return ae.RetryAfter, true
	}
	return backoff(attempt, base, max, rand01), true
}

// retryableTransportError reports whether a failure to get a response
// (http.Client.Do error) may go away on another attempt: refused or reset
// connections, timeouts and temporary DNS failures do; certificate
// problems, TLS spoken to a plain-HTTP server, unknown hosts and bad URLs
// do not.
func retryableTransportError(err error) bool {
	if err == nil {
		return false
	}
	var (
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		certInvalid x509.CertificateInvalidError
		verifyErr   *tls.CertificateVerificationError
		recordErr   tls.RecordHeaderError
		dnsErr      *net.DNSError
	)
	switch {
	case errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &certInvalid),
		errors.As(err, &verifyErr), errors.As(err, &recordErr):
		return false
	case errors.As(err, &dnsErr):
		return !dnsErr.IsNotFound
	case strings.Contains(err.Error(), "unsupported protocol scheme"):
		return false
	}
	return true
}
