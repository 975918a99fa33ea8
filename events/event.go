package events

import "time"

// Schema is the value of every event's schema field.
const Schema = "odek.event/v1"

// Type is an event type. Consumers must ignore types they do not know.
type Type string

// Event types of odek.event/v1.
const (
	RunStarted              Type = "run_started"
	IterationCompleted      Type = "iteration_completed"
	ToolCallStarted         Type = "tool_call_started"
	ToolCallCompleted       Type = "tool_call_completed"
	ToolCallFailed          Type = "tool_call_failed"
	SessionSaved            Type = "session_saved"
	ContextTrimmed          Type = "context_trimmed"
	ContextCompacted        Type = "context_compacted"
	BudgetExceeded          Type = "budget_exceeded"
	RunCompleted            Type = "run_completed"
	RunFailed               Type = "run_failed"
	PlanCreated             Type = "plan_created"
	PlanUpdated             Type = "plan_updated"
	PlanBlocked             Type = "plan_blocked"
	SubagentDenied          Type = "subagent_denied"
	SubagentSpawned         Type = "subagent_spawned"
	SubagentCompleted       Type = "subagent_completed"
	SubagentConcurrencyWait Type = "subagent_concurrency_wait"
	// ToolCallProgress is an MCP server's notifications/progress about a
	// running call (internal/ext emits it; docs/EVENTS.md): data tool
	// (qualified name), server, mcp_tool, progress, and when the server
	// sent them total and message (untrusted server text, at most 200
	// characters, redacted like every event).
	ToolCallProgress Type = "tool_call_progress"
)

// Event is one odek.event/v1 record. Field order here is the wire order.
type Event struct {
	Schema string `json:"schema"`
	Type   Type   `json:"type"`
	// Seq is assigned by the Emitter in emit order, starting at 1 per run;
	// a gap in a sink shows a dropped event.
	Seq       uint64 `json:"seq"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id,omitempty"`
	// Iteration is 1-based; 0 (omitted) for events outside an iteration.
	Iteration int            `json:"iteration,omitempty"`
	Tool      string         `json:"tool,omitempty"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data,omitempty"`
	// TraceID and SpanID (lowercase hex) join the event to the
	// OpenTelemetry span it belongs to; omitted when the run is not traced
	// (internal/telemetry.EventSpans sets them; docs/OBSERVABILITY.md).
	// Additive fields of odek.event/v1 (issue 24).
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

// Sink receives events one at a time, in Seq order, from a single
// goroutine. Write must not retain ev after returning.
type Sink interface {
	Write(ev *Event) error
}
