package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Model answers one chat-completions call: the loop makes one Complete
// call per iteration. odek's own client for OpenAI-compatible endpoints
// implements it; an embedding program may bring its own (a scripted model
// in tests, another provider's SDK behind an adapter).
//
// Complete must not retain req or anything in it; the returned Response
// belongs to the caller. An error that wraps ErrContextLength makes the
// loop cut the conversation down and call once more; an error with a
// method ErrorClass() string names its own error_class in the run's
// events (see ErrorClass). Complete must return promptly when ctx is done.
type Model interface {
	Complete(ctx context.Context, req Request) (*Response, error)
}

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
// part of Content or of an answer. The JSON form of a Message
// (MarshalJSON, used by session stores) is the wire form with Extra's
// members beside the known fields; UnmarshalJSON collects every unknown
// non-null member back into Extra, and reads content sent as an array of
// parts as the concatenation of their text.
//
// Images are pictures sent with a user message (Config.GoalImages puts
// them on the goal's message). They are for the model alone: the JSON form
// leaves them out, so a saved session keeps the text. A Model that cannot
// send them fails the call with an error wrapping ErrImagesRefused.
//
// Fields may be added; a Model that does not know a field ignores it.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	// Extra is a JSON object of provider fields, or nil.
	Extra json.RawMessage `json:"-"`
	// Images go with a user message's Content; nil ⇒ text only.
	Images []Image `json:"-"`
}

// Image is a picture a user message carries (Message.Images). odek's
// client sends it as an OpenAI-compatible image_url content part holding a
// data URL.
type Image struct {
	MediaType string // image/jpeg, image/png, image/gif or image/webp
	Data      []byte
}

// ErrImagesRefused, wrapped by a Model's error, says the endpoint refused
// the request's images (a model without vision). With
// Config.DropRefusedImages the loop drops every image of the run and makes
// the call once more; otherwise the run ends with the error.
var ErrImagesRefused = errors.New("agent: the model refused the request's images")

// StreamingModel is a Model that hands over the answer's text as it is
// generated. When the run has an AgentSignalHandler the loop calls
// CompleteStream instead of Complete and turns the pieces, redacted, into
// SignalAnswerStart and SignalAnswerDelta signals.
//
// CompleteStream is Complete plus delta, called synchronously with each
// piece of answer content (never reasoning, never tool-call arguments), in
// order, from one goroutine at a time, never after CompleteStream
// returned. A Delta with Restart set says the pieces before it are void:
// a failed attempt is being retried and the answer starts over.
type StreamingModel interface {
	Model
	CompleteStream(ctx context.Context, req Request, delta func(Delta)) (*Response, error)
}

// Delta is one piece of a streamed answer (StreamingModel).
type Delta struct {
	// Restart starts the answer over: the text delivered before is void.
	Restart bool
	// Text continues the answer; may be empty with Restart.
	Text string
}

// ToolCall is a function call requested by the model. Extra carries the
// provider's other fields of the call (Gemini 3's
// extra_content.google.thought_signature, which must come back with the
// call) as one JSON object, sent back verbatim; see Message.
type ToolCall struct {
	// ID is the provider's call id; the loop makes up
	// "it<iteration>-call<index>" when it is empty.
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
	// Strict asks for OpenAI's strict function calling. odek's client sets
	// it (and adapts Parameters) for the models configured for it; the
	// loop leaves it false.
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
	// OutputSchema, when set, is the JSON Schema the final answer must be
	// valid against (Config.OutputSchema); a client that can ask the
	// endpoint for it natively (response_format) does, others ignore it.
	OutputSchema json.RawMessage
}

// Usage is the token accounting of one call (or a sum of calls).
type Usage struct {
	PromptTokens     int `json:"input_tokens"`
	CompletionTokens int `json:"output_tokens"`
	// CachedTokens is the part of PromptTokens served from the provider's
	// prompt cache, when the provider reports it; 0 otherwise.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens is the part of PromptTokens the provider wrote to
	// its prompt cache (reported by Anthropic-style caches, which bill it
	// above the input price); 0 otherwise.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// CachedShare is the share of PromptTokens served from the prompt cache
// (0 without prompt tokens).
func (u Usage) CachedShare() float64 {
	if u.PromptTokens <= 0 {
		return 0
	}
	return float64(u.CachedTokens) / float64(u.PromptTokens)
}

// Add returns the element-wise sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// Timing is measured by the model client for the successful attempt of a
// call; zero fields are unknown and left out of the events.
type Timing struct {
	// Duration is request start to the end of the response body.
	Duration time.Duration
	// TTFT is request start to the first content, reasoning or tool-call
	// delta (streaming only; 0 when not measured).
	TTFT time.Duration
	// Generation is first delta to end of stream (streaming only).
	Generation time.Duration
	// Attempts is the number of HTTP attempts made, retries included.
	Attempts int
}

// Response is the assembled answer of one call.
type Response struct {
	// Message is the assistant message: Content without any reasoning
	// content, and ToolCalls in the model's order.
	Message Message
	// Reasoning is the model's reasoning text, when the provider sent one.
	// It is for display and logs only; what must go back to the provider
	// is in Message.Extra.
	Reasoning    string
	FinishReason string
	Model        string
	Usage        Usage
	Timing       Timing
}
