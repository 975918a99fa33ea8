// Package llm is odek's client for OpenAI-compatible chat-completions
// endpoints: streaming (SSE) and non-streaming requests with function
// calling, per-call usage and timing, retries with jittered backoff, and an
// idle timeout for silent streams.
//
// A *Client is safe for concurrent use. It owns no goroutines between calls.
// Complete does not retain the Request or anything in it; the returned
// Response (strings and slices included) belongs to the caller. CompleteStream's delta and
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
//
// Context windows: WindowForModel (a documented family table),
// ResolveWindow (operator, endpoint report, table, preset, default) and
// Client.DiscoverWindow (asked once per process). Cached input tokens are
// read from every provider's usage shape into Usage.CachedTokens and
// CacheWriteTokens; CacheBreakpointModels marks explicit prompt-cache
// breakpoints for the models that need them.
package llm

import "github.com/odekrun/odek/agent"

// The message, request and response types are the agent package's (the
// loop and its Go API own them); the aliases keep this package's callers
// and its encoder working on them without a conversion.
type (
	// Message is one chat message in OpenAI wire shape.
	Message = agent.Message
	// ToolCall is a function call requested by the model.
	ToolCall = agent.ToolCall
	// FunctionCall names the function and carries its raw arguments.
	FunctionCall = agent.FunctionCall
	// ToolSpec declares a tool to the model.
	ToolSpec = agent.ToolSpec
	// FunctionSpec is the function part of a ToolSpec.
	FunctionSpec = agent.FunctionSpec
	// Request is one chat-completions call.
	Request = agent.Request
	// Usage is the token accounting of one call (or a sum of calls).
	Usage = agent.Usage
	// Timing is measured by the client for the successful attempt of a call.
	Timing = agent.Timing
	// Response is the assembled answer of one call.
	Response = agent.Response
)

// Message roles.
const (
	RoleSystem    = agent.RoleSystem
	RoleUser      = agent.RoleUser
	RoleAssistant = agent.RoleAssistant
	RoleTool      = agent.RoleTool
)
