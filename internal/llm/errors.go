package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/agent"
)

// Sentinel errors. Match them with errors.Is; the typed errors below wrap
// them where they apply. The ones that end a run name their event
// error_class through an ErrorClass method (see agent.ErrorClass), and
// ErrContextLength also matches agent.ErrContextLength, on which the loop
// trims the conversation and calls again.
var (
	// ErrUnauthorized: the endpoint answered 401 or 403. Never retried.
	ErrUnauthorized error = &classed{"llm: unauthorized", "llm_unauthorized", nil}
	// ErrQuotaExhausted: the account has no quota or credit left (429 with
	// insufficient_quota, 402, or a quota/billing message). Never retried.
	ErrQuotaExhausted error = &classed{"llm: quota exhausted", "llm_quota_exhausted", nil}
	// ErrContextLength: the request does not fit the model's context window
	// (400/413 with context_length_exceeded or an equivalent message). Never
	// retried; the caller may trim the conversation and call again.
	ErrContextLength error = &classed{"llm: context length exceeded", "llm_context_length", agent.ErrContextLength}
	// ErrMalformedResponse: the endpoint sent something that is not the
	// chat-completions protocol (invalid JSON in a chunk or body). Retried:
	// it is usually a truncated or mangled reply from a proxy or an
	// overloaded server, and MaxAttempts bounds the cost if it is not.
	ErrMalformedResponse error = &classed{"llm: malformed response", "llm_error", nil}
	// ErrStreamInterrupted: the stream ended (EOF or a read error) before a
	// finish_reason or [DONE] arrived. Retried.
	ErrStreamInterrupted error = &classed{"llm: stream ended before finish_reason", "llm_error", nil}
	// ErrRetriesExhausted: every attempt allowed by Config.MaxAttempts
	// failed with a retryable error. The error also wraps the last
	// attempt's error, so errors.Is/As see both.
	ErrRetriesExhausted error = &classed{"llm: retries exhausted", "llm_error", nil}
	// ErrInvalidRequest: the Request or Config is unusable (empty model, no
	// messages, tool parameters that are not JSON, bad base URL). Never
	// retried; nothing was sent.
	ErrInvalidRequest = errors.New("llm: invalid request")
	// ErrOutputTruncated: the model hit its output length limit
	// (finish_reason "length") in the middle of a tool call, whose
	// arguments are therefore incomplete; see *TruncatedToolCallError.
	// Never retried (the same limit would cut it again).
	ErrOutputTruncated = errors.New("llm: output cut off by the length limit")
)

// classed is a sentinel that names its error_class and may match an
// agent sentinel too.
type classed struct {
	msg, class string
	also       error
}

func (e *classed) Error() string        { return e.msg }
func (e *classed) ErrorClass() string   { return e.class }
func (e *classed) Is(target error) bool { return e.also != nil && target == e.also }

// TruncatedToolCallError reports a tool call whose arguments were cut off
// by finish_reason "length". The call is not returned, so it is never run
// with partial arguments. It wraps ErrOutputTruncated.
type TruncatedToolCallError struct {
	Tool          string // the function name, "" if none arrived
	ArgumentBytes int    // bytes of arguments received
}

func (e *TruncatedToolCallError) Error() string {
	return fmt.Sprintf("llm: the model's output was cut off by its length limit (finish_reason \"length\") inside a call of tool %q "+
		"after %d bytes of arguments, which are not complete JSON; the call was not run (raise the completion token limit, max_tokens)",
		e.Tool, e.ArgumentBytes)
}

func (e *TruncatedToolCallError) Unwrap() error { return ErrOutputTruncated }

// checkTruncated returns a *TruncatedToolCallError when finish is
// "length" and a call's arguments (as received, before "" became "{}")
// are not complete JSON.
func checkTruncated(finish string, names []string, args [][]byte) error {
	if finish != "length" {
		return nil
	}
	for i := range args {
		if !json.Valid(args[i]) {
			return &TruncatedToolCallError{Tool: names[i], ArgumentBytes: len(args[i])}
		}
	}
	return nil
}

// MaxErrorMessageBytes bounds the provider message kept in an APIError
// (longer messages are cut at a rune boundary and marked with "…").
const MaxErrorMessageBytes = 1000

// APIError is an error reported by the endpoint: a non-2xx HTTP status, an
// error object in a 200 body, or an error object sent inside the stream.
//
// It wraps ErrUnauthorized, ErrQuotaExhausted or ErrContextLength when the
// error is one of those, so errors.Is works on it directly.
type APIError struct {
	// StatusCode is the HTTP status of the response. For an error sent
	// inside a 200 stream or body it is 200 (the provider's own numeric
	// code, if any, is in Code).
	StatusCode int
	// Type, Code and Message are the provider's error.type, error.code and
	// error.message (Message truncated to MaxErrorMessageBytes and scrubbed
	// of anything that looks like an API key). A numeric code is kept in
	// its decimal form.
	Type, Code, Message string
	// RetryAfter is the wait the provider asked for (Retry-After or
	// retry-after-ms), 0 when it asked for none.
	RetryAfter time.Duration
	// InStream reports that the error arrived inside a 200 response rather
	// than as the HTTP status.
	InStream bool

	kind error // one of the sentinels above, or nil
}

// Error names the status, the provider's type/code and message, and a hint
// for the errors a person must act on. It never contains the API key.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	if e.InStream {
		b.WriteString("error in response")
	} else {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	}
	switch {
	case e.Type != "" && e.Code != "":
		fmt.Fprintf(&b, " (%s, %s)", e.Type, e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (%s)", e.Type)
	case e.Code != "":
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	switch e.kind {
	case ErrUnauthorized:
		b.WriteString("; check the API key")
	case ErrQuotaExhausted:
		b.WriteString("; the account's quota or credit is used up, check billing")
	case ErrContextLength:
		b.WriteString("; the conversation is longer than the model's context window")
	}
	if e.kind == nil && e.StatusCode == 404 {
		b.WriteString("; check the base URL and the model name")
	}
	return b.String()
}

// Unwrap returns the sentinel this error belongs to (nil for a plain
// provider error).
func (e *APIError) Unwrap() error { return e.kind }

// ErrorClass is the event error_class of a run that ended on e.
func (e *APIError) ErrorClass() string {
	if c, ok := e.kind.(*classed); ok {
		return c.class
	}
	return "llm_error"
}

// IdleTimeoutError reports a stream that sent nothing for longer than
// Config.IdleTimeout. It is retried.
type IdleTimeoutError struct {
	Idle time.Duration // the configured limit that was exceeded
}

// ErrorClass is the event error_class of a run that ended on e.
func (e *IdleTimeoutError) ErrorClass() string { return "llm_error" }

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("llm: stream idle for more than %v (idle timeout)", e.Idle)
}

// RequestTimeoutError reports an attempt that exceeded
// Config.RequestTimeout: no response headers in time (streaming) or no
// complete body in time (non-streaming). It is retried.
type RequestTimeoutError struct {
	Timeout time.Duration // the configured limit that was exceeded
}

func (e *RequestTimeoutError) Error() string {
	return fmt.Sprintf("llm: no response within %v (request timeout)", e.Timeout)
}

// LineTooLongError reports an SSE line longer than the limit
// (MaxSSELineBytes for the client). It is not retried: the reply would not
// fit next time either.
type LineTooLongError struct {
	Limit    int // bytes allowed per line
	Observed int // bytes of the line read before giving up (> Limit)
}

// ErrorClass is the event error_class of a run that ended on e.
func (e *LineTooLongError) ErrorClass() string { return "llm_error" }

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("llm: SSE line of at least %d bytes exceeds the limit of %d bytes", e.Observed, e.Limit)
}

// ResponseTooLargeError reports a response body larger than the limit
// (MaxResponseBytes for the client). It is not retried.
type ResponseTooLargeError struct {
	Limit    int64 // bytes allowed per response body
	Observed int64 // bytes read before giving up (> Limit)
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("llm: response body of at least %d bytes exceeds the limit of %d bytes", e.Observed, e.Limit)
}

// malformedf wraps ErrMalformedResponse with detail.
func malformedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedResponse}, args...)...)
}

// truncateMessage cuts s to at most max bytes at a rune boundary, marking
// the cut with "…".
func truncateMessage(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
