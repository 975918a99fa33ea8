// Package llm is odek's client for OpenAI-compatible chat-completions
// endpoints: streaming (SSE) and non-streaming requests with function
// calling, per-call usage and timing, retries with jittered backoff, and an
// idle timeout for silent streams.
//
// A *Client is safe for concurrent use. It owns no goroutines between calls.
// Complete does not retain the Request or anything in it; the returned
// Response (strings and slices included) belongs to the caller. OnDelta and
// OnRetry callbacks run synchronously on the calling goroutine.
//
// Decisions are pure functions (classify, backoff, parseRetryAfter,
// retryWait, retryableTransportError) with table tests; Complete only calls
// them. Streamed chunks are decoded by a small allocation-free decoder
// (chunk.go) that is fuzzed against encoding/json. Every input from the
// endpoint is bounded: MaxSSELineBytes per line, MaxResponseBytes per body,
// MaxErrorBodyBytes per error body, MaxErrorMessageBytes per message kept.
// Errors never contain the API key.
//
// Per-call CPU is kept low for long agent runs: every message worth it is
// encoded once and its encoding memoized across calls (keyed by the
// identity of its content string or tool-call array, checked against the
// whole message, bounded in bytes), and the body is sent as segments that
// share those encodings, so resending an unchanged history costs a lookup
// per message rather than an encoding or a copy.
//
// Provider differences: fields a provider attaches to assistant messages
// and tool calls are kept in Message.Extra and ToolCall.Extra and sent
// back verbatim (DeepSeek's reasoning_content, Gemini 3's thought
// signatures, OpenRouter's reasoning_details, …); stream shapes of every
// provider in testdata/providers are assembled by the same rules on both
// paths; tool schemas are repaired by internal/toolschema and adapted to
// the endpoint; Presets lists known providers and their quirks, selected by
// Config.Provider or recognised from the base URL.
package llm

import (
	"encoding/json"
	"time"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message in OpenAI wire shape. Content is always
// marshalled (as "" when empty).
//
// Extra carries whatever else the provider attached to an assistant
// message (DeepSeek's reasoning_content, OpenRouter's reasoning and
// reasoning_details, fields odek does not know) as one JSON object, kept
// verbatim and sent back on the next request: several providers reject a
// tool-using conversation whose assistant turns lost them. It is never
// part of Content or of an answer. The JSON form of a Message (MarshalJSON,
// used by the request encoder and by session stores) is the wire form with
// Extra's members beside the known fields; UnmarshalJSON collects every
// unknown non-null member back into Extra.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	// Extra is a JSON object of provider fields, or nil.
	Extra json.RawMessage `json:"-"`
}

// ToolCall is a function call requested by the model. Extra carries the
// provider's other fields of the call (Gemini 3's
// extra_content.google.thought_signature, which must come back with the
// call) as one JSON object, sent back verbatim; see Message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
	// Extra is a JSON object of provider fields, or nil.
	Extra json.RawMessage `json:"-"`
}

// FunctionCall names the function and carries its raw JSON arguments, as
// the model produced them (possibly invalid JSON).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec declares a tool to the model.
type ToolSpec struct {
	Type     string       `json:"type"` // "function"
	Function FunctionSpec `json:"function"`
}

// FunctionSpec is the function part of a ToolSpec. Parameters is a JSON
// Schema object.
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Strict asks for OpenAI's strict function calling. The client sets it
	// (and adapts Parameters) for the models in Config.StrictToolModels;
	// callers leave it false.
	Strict bool `json:"strict,omitempty"`
}

// Request is one chat-completions call.
type Request struct {
	Model    string
	Messages []Message
	Tools    []ToolSpec
	// Temperature, when non-nil, is sent as is.
	Temperature *float64
	// MaxTokens, when > 0, caps the completion length.
	MaxTokens int
}

// Usage is the token accounting of one call (or a sum of calls).
type Usage struct {
	PromptTokens     int `json:"input_tokens"`
	CompletionTokens int `json:"output_tokens"`
	// CachedTokens is the part of PromptTokens served from the provider's
	// prompt cache, when the provider reports it; 0 otherwise.
	CachedTokens int `json:"cached_tokens,omitempty"`
}

// Add returns the element-wise sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
	}
}

// Timing is measured by the client for the successful attempt of a call.
type Timing struct {
	// Duration is request start to the end of the response body.
	Duration time.Duration
	// TTFT is request start to the first content, reasoning or tool-call delta
	// (streaming only; 0 when not measured).
	TTFT time.Duration
	// Generation is first delta to end of stream (streaming only).
	Generation time.Duration
	// Attempts is the number of HTTP attempts made, retries included.
	Attempts int
}

// Response is the assembled answer of one call.
type Response struct {
	// Message is the assistant message: Content without any reasoning
	// content, and ToolCalls assembled in index order.
	Message Message
	// Reasoning is the model's reasoning text, when the provider streamed
	// or returned one (reasoning_content, reasoning, thinking content
	// parts, a leading <think> block). It is for display and logs only;
	// what must go back to the provider is in Message.Extra.
	Reasoning    string
	FinishReason string
	Model        string
	Usage        Usage
	Timing       Timing
}
